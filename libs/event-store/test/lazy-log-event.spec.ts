import { LazyLogEvent, LazyStoredEvent, storedDataJson } from '@app/event-store';

describe('LazyLogEvent', () => {
  it('parses data and metadata only when they are first read, once', () => {
    // Not JSON: reading data would throw, so constructing and reading the rest must not parse it.
    const e = new LazyLogEvent('t.v1', 3n, '{"broken', '{"at":5,"actor":"http"}');
    expect(e.type).toBe('t.v1');
    expect(e.position).toBe(3n);
    expect(e.metadata).toEqual({ at: 5, actor: 'http' });
    expect(e.metadata).toBe(e.metadata);
    expect(() => e.data).toThrow(SyntaxError);
    const ok = new LazyLogEvent('t.v1', 1n, '{"a":[1,null]}', '{"at":1}');
    expect(ok.data).toEqual({ a: [1, null] });
    expect(ok.data).toBe(ok.data);
    // A payload that is JSON null is parsed once too, and stays null.
    const none = new LazyLogEvent('t.v1', 1n, 'null', '{"at":1}');
    expect(none.data).toBeNull();
  });

  it('serialises as the plain event it stands for', () => {
    const data = { n: 1, s: 'x"y', nested: { list: [1, 'two'] } };
    const e = new LazyStoredEvent('id-1', 'inbox-dc_1', 0n, 't.v1', 7n, JSON.stringify(data), '{"at":9}');
    const replacer = (_k: string, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v);
    expect(JSON.stringify(e, replacer)).toBe(JSON.stringify(
      { id: 'id-1', type: 't.v1', streamName: 'inbox-dc_1', revision: 0n, position: 7n, data, metadata: { at: 9 } }, replacer));
  });

  it('gives its stored text to a fold that can use it; a plain event has none', () => {
    expect(storedDataJson(new LazyLogEvent('t.v1', 1n, '{"n":1}', '{"at":1}'))).toBe('{"n":1}');
    expect(storedDataJson({ type: 't.v1', position: 1n, data: { n: 1 }, metadata: { at: 1 } })).toBeUndefined();
  });

  it('reads the objects its text was serialised from when they read as their JSON, and parses the text otherwise', () => {
    const data = { sourceId: 'dc_1', event: { n: 1, list: [1, null] } };
    const metadata = { at: 5, actor: 'http' };
    // The text is not JSON: had it been parsed, reading would throw.
    const given = new LazyStoredEvent('id-1', 's', 0n, 't.v1', 1n, '{"broken', '{"broken', data, metadata);
    expect(given.data).toBe(data);
    expect(given.metadata).toBe(metadata);
    // Objects JSON would change (an undefined field, a Date) are not read: the text is.
    const odd = { n: 1, gone: undefined, at: new Date(0) };
    const oddMeta = { at: 5, actor: undefined };
    const parsed = new LazyStoredEvent('id-2', 's', 1n, 't.v1', 2n, JSON.stringify(odd), JSON.stringify(oddMeta), odd, oddMeta);
    expect(parsed.data).toStrictEqual({ n: 1, at: '1970-01-01T00:00:00.000Z' });
    expect(parsed.metadata).toStrictEqual({ at: 5 });
    // Data that is JSON null is read as null from the object too.
    expect(new LazyStoredEvent('id-3', 's', 2n, 't.v1', 3n, 'null', '{"at":1}', null).data).toBeNull();
  });
});
