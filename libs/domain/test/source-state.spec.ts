import { event, EventTypes, evolveSource, initialSourceState, RecentIds } from '@app/domain';

describe('RecentIds', () => {
  it('keeps the last `capacity` distinct ids and forgets the oldest first', () => {
    const ids = new RecentIds(3);
    for (const id of ['a', 'b', 'c', 'd', 'e']) ids.add(id);
    expect(ids.size).toBe(3);
    expect(['a', 'b', 'c', 'd', 'e'].map((id) => ids.has(id))).toEqual([false, false, true, true, true]);
    ids.add('f');
    expect(['c', 'd', 'e', 'f'].map((id) => ids.has(id))).toEqual([false, true, true, true]);
  });

  it('does not spend a place on an id it already holds', () => {
    const ids = new RecentIds(3);
    ids.add('a');
    ids.add('b');
    for (let i = 0; i < 10; i++) ids.add('a');
    ids.add('c');
    expect(['a', 'b', 'c'].map((id) => ids.has(id))).toEqual([true, true, true]);
    ids.add('d');
    // 'a' came first, whatever was added again since.
    expect(['a', 'b', 'c', 'd'].map((id) => ids.has(id))).toEqual([false, true, true, true]);
  });

  it('wraps around its ring many times without losing count', () => {
    const ids = new RecentIds(7);
    for (let i = 0; i < 1000; i++) ids.add(`r${i}`);
    expect(ids.size).toBe(7);
    for (let i = 0; i < 1000; i++) expect(ids.has(`r${i}`)).toBe(i >= 993);
  });

  it('refuses a capacity that holds nothing', () => {
    expect(() => new RecentIds(0)).toThrow(RangeError);
    expect(() => new RecentIds(1.5)).toThrow(RangeError);
  });
});

describe('evolveSource: handled requests', () => {
  const ran = (requestId: string) => event(EventTypes.sourceRunCompleted, {
    sourceId: 'dc_1', runId: `run-${requestId}`, trigger: 'http', requestId, ok: true, logs: [], emitted: 0, durationMs: 1,
  });

  it('remembers the last 10,000 requests that ran, and forgets older ones', () => {
    const state = initialSourceState('dc_1');
    for (let i = 0; i <= 10_000; i++) evolveSource(state, ran(`r${i}`), BigInt(i));
    expect(state.handledRequests.size).toBe(10_000);
    expect(state.handledRequests.has('r0')).toBe(false);
    expect(state.handledRequests.has('r1')).toBe(true);
    expect(state.handledRequests.has('r10000')).toBe(true);
    expect(state.revision).toBe(10_000n);
  });
});
