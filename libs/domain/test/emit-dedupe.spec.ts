import { applyDedupe, emptyDedupeCache, PendingEmit, rememberEmit, UNIQUE_CACHE_SIZE } from '../src/emit-dedupe';

const e = (id: string | number | undefined, ts?: number): PendingEmit => ({ event: { id }, meta: { id, ts } });
const ids = (out: { accepted: PendingEmit[] }) => out.accepted.map((x) => x.meta.id);

describe('applyDedupe (spec 6.1 / 6.2)', () => {
  it('without a strategy emits everything, oldest to newest when ts is given', () => {
    const out = applyDedupe([e('c', 3), e('a', 1), e('b', 2)], undefined, emptyDedupeCache());
    expect(ids(out)).toEqual(['a', 'b', 'c']);
  });

  it('keeps the order of emits that carry no ts', () => {
    expect(ids(applyDedupe([e('x'), e('y'), e('z')], undefined, emptyDedupeCache()))).toEqual(['x', 'y', 'z']);
  });

  it('unique: emits ids not in the cache, caches them, purges the oldest past 100 (FIFO)', () => {
    let cache = emptyDedupeCache();
    let out = applyDedupe([e(1), e(2), e(1)], 'unique', cache);
    expect(ids(out)).toEqual([1, 2]);
    cache = out.cache;
    out = applyDedupe([e(2), e(3)], 'unique', cache);
    expect(ids(out)).toEqual([3]);
    cache = out.cache;
    const many = [...Array(UNIQUE_CACHE_SIZE).keys()].map((i) => e(`m${i}`));
    cache = applyDedupe(many, 'unique', cache).cache;
    expect(cache.unique).toHaveLength(UNIQUE_CACHE_SIZE);
    // 1, 2, 3 were purged first-in-first-out, so they are new again; m99 is still cached.
    expect(ids(applyDedupe([e(1), e('m99')], 'unique', cache))).toEqual([1]);
  });

  it('greatest: only larger numeric ids, cache moves to the largest; non-numeric refused', () => {
    let out = applyDedupe([e(5), e(3), e(7)], 'greatest', emptyDedupeCache());
    expect(ids(out)).toEqual([5, 7]);
    expect(out.cache.greatest).toBe(7);
    out = applyDedupe([e(6), e('8'), e('abc')], 'greatest', out.cache);
    expect(ids(out)).toEqual(['8']);
    expect(out.refused[0].reason).toMatch(/numeric/);
  });

  it('last: emits what comes after the cached id; all when none matches', () => {
    let out = applyDedupe([e('a'), e('b'), e('c')], 'last', emptyDedupeCache());
    expect(ids(out)).toEqual(['a', 'b', 'c']);
    expect(out.cache.last).toBe('c');
    out = applyDedupe([e('b'), e('c'), e('d'), e('e')], 'last', out.cache);
    expect(ids(out)).toEqual(['d', 'e']);
    out = applyDedupe([e('x'), e('y')], 'last', out.cache);
    expect(ids(out)).toEqual(['x', 'y']);
    const same = applyDedupe([e('x'), e('y')], 'last', out.cache);
    expect(ids(same)).toEqual([]);
    expect(same.cache.last).toBe('y');
  });

  it('last with ts: the cached event is the newest by timestamp', () => {
    const out = applyDedupe([e('new', 200), e('old', 100)], 'last', emptyDedupeCache());
    expect(ids(out)).toEqual(['old', 'new']);
    expect(out.cache.last).toBe('new');
  });

  it('refuses an emit without id under any strategy, with a clear reason', () => {
    for (const s of ['unique', 'greatest', 'last'] as const) {
      const out = applyDedupe([e(undefined)], s, emptyDedupeCache());
      expect(out.accepted).toEqual([]);
      expect(out.refused[0].reason).toMatch(/without an id/);
    }
  });

  it('does not modify the input cache', () => {
    const cache = emptyDedupeCache();
    applyDedupe([e(1)], 'unique', cache);
    expect(cache.unique).toEqual([]);
  });

  it('rememberEmit rebuilds the same cache as applying the emits', () => {
    const emits = [e(4), e(9), e(2)];
    const applied = applyDedupe(emits, 'unique', emptyDedupeCache()).cache;
    const rebuilt = emptyDedupeCache();
    for (const x of emits) rememberEmit(rebuilt, x.meta.id);
    expect(rebuilt.unique).toEqual(applied.unique);
    expect(rebuilt.greatest).toBe(9);
    expect(rebuilt.last).toBe('2');
  });
});
