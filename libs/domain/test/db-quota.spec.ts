import { dbEntryBytes, event, EventTypes, evolveSource, fitDbWrites, initialSourceState } from '@app/domain';

describe('the per-source db size', () => {
  it('is folded from db writes: an overwrite replaces its entry\'s size', () => {
    const state = initialSourceState();
    evolveSource(state, event(EventTypes.sourceDbSet, { sourceId: 'dc_1', key: 'a', value: 'xy' }), 0n);
    evolveSource(state, event(EventTypes.sourceDbSet, { sourceId: 'dc_1', key: 'é', value: { n: 1 } }), 1n);
    expect(state.dbBytes).toBe(1 + 4 + 2 + 7);
    evolveSource(state, event(EventTypes.sourceDbSet, { sourceId: 'dc_1', key: 'a', value: null }), 2n);
    expect(state.dbBytes).toBe(1 + 4 + 2 + 7);
    evolveSource(state, event(EventTypes.sourceDbSet, { sourceId: 'dc_1', key: 'a', value: 1 }), 3n);
    expect(state.dbBytes).toBe(1 + 1 + 2 + 7);
    expect(dbEntryBytes('é', { n: 1 })).toBe(9);
  });
});

describe('fitDbWrites', () => {
  const sizes = new Map([['a', 50], ['b', 40]]);

  it('keeps writes up to the first that grows the db past the cap and names the limit', () => {
    const decision = fitDbWrites(sizes, 90, [{ key: 'c', value: 'x' }, { key: 'd', value: 'y'.repeat(10) }, { key: 'e', value: 1 }], 100);
    expect(decision.accepted.map((w) => w.key)).toEqual(['c']);
    expect(decision.refused).toBe('db.set("d"): the source\'s db would hold 107 bytes, more than the 100 bytes allowed per source (SLUICE_MAX_DB_BYTES_PER_SOURCE=100)');
  });

  it('always keeps writes that shrink or keep an entry, even over the cap, and counts what they freed', () => {
    const decision = fitDbWrites(sizes, 200, [{ key: 'a', value: 1 }, { key: 'b', value: 2 }], 100);
    expect(decision).toEqual({ accepted: [{ key: 'a', value: 1 }, { key: 'b', value: 2 }] });
    const freed = fitDbWrites(sizes, 90, [{ key: 'a', value: null }, { key: 'c', value: 'z'.repeat(40) }], 100);
    expect(freed.refused).toBeUndefined();
  });
});
