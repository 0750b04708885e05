import { normalizeAppend, prepareAppend } from '../src/append-rules';

/** The metadata an append completes (`at`), as it was with `{ ...metadata, at: metadata.at ?? now }`. */
describe('normalizeAppend: metadata', () => {
  const metadataOf = (metadata: Record<string, unknown> | undefined) =>
    normalizeAppend('s-1', [{ type: 't', data: {}, metadata }], undefined).events[0].metadata as unknown as Record<string, unknown>;

  it('adds `at` after the members given, and copies them', () => {
    const given = { causationId: 'c-1', actor: 'dc_1' };
    const before = Date.now();
    const m = metadataOf(given);
    expect(Object.keys(m)).toEqual(['causationId', 'actor', 'at']);
    expect(m.at).toBeGreaterThanOrEqual(before);
    expect(m).not.toBe(given);
    expect(given).toEqual({ causationId: 'c-1', actor: 'dc_1' });
  });

  it('keeps a given `at` where it is, and replaces a null or undefined one', () => {
    expect(Object.entries(metadataOf({ at: 5, actor: 'a' }))).toEqual([['at', 5], ['actor', 'a']]);
    const replaced = metadataOf({ at: undefined, actor: 'a' });
    expect(Object.keys(replaced)).toEqual(['at', 'actor']);
    expect(typeof replaced.at).toBe('number');
    expect(typeof metadataOf({ at: null }).at).toBe('number');
  });

  it('gives an event without metadata just `at`', () => {
    expect(Object.keys(metadataOf(undefined))).toEqual(['at']);
  });

  it('keeps an own `__proto__` member (parsed JSON can have one) a member, not a prototype', () => {
    const m = metadataOf(JSON.parse('{"__proto__": {"polluted": true}, "actor": "a"}'));
    expect(Object.getPrototypeOf(m)).toBe(Object.prototype);
    expect((m as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(m, '__proto__')).toBe(true);
    expect(JSON.parse(JSON.stringify(m))).toEqual(expect.objectContaining({ actor: 'a' }));
  });
});

describe('prepareAppend: data given as text', () => {
  it('writes the text given, and hands the fold the object only when told the text reads as it (dataJsonIsData)', () => {
    const data = { a: 1, payload: { n: 2 } };
    const reordered = '{"payload":{"n":2},"a":1}';
    const [plain, shared] = prepareAppend('s-1', [
      { type: 't', data, dataJson: JSON.stringify(data) },
      { type: 't', data, dataJson: reordered, dataJsonIsData: true },
    ], undefined).events;
    expect(plain).toMatchObject({ data: JSON.stringify(data), givenData: undefined });
    expect(shared.data).toBe(reordered);
    expect(shared.givenData).toBe(data);
    // Without text, the store serialises the data and keeps the object, as before.
    const [own] = prepareAppend('s-1', [{ type: 't', data }], undefined).events;
    expect(own).toMatchObject({ data: JSON.stringify(data) });
    expect(own.givenData).toBe(data);
  });
});
