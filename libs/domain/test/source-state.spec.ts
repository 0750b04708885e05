import {
  decideSource, event, EventTypes, evolveSource, ExecutionResult, initialSourceState, RecentIds, SOURCE_SNAPSHOT_FORMAT, SourceConfig,
  SourceDecision, sourceSnapshot, SourceState, sourceStateFromSnapshot, SourceStreamEvent,
} from '@app/domain';

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

describe('source snapshots: sourceSnapshot and sourceStateFromSnapshot', () => {
  const SOURCE = 'dc_snap';
  const config: SourceConfig = { componentId: 'sc_1', name: 'Snap', nameSlug: 'snap', configuredProps: { n: 1 }, active: true };

  /** A history as the actor records it: a deploy, then runs with db writes and deduped emits, an update on the way. */
  function history(runs: number): SourceStreamEvent[] {
    const state = initialSourceState(SOURCE);
    const events: SourceStreamEvent[] = [];
    const apply = (d: SourceDecision) => {
      if ('rejected' in d) throw new Error(d.rejected.message);
      for (const e of d.events as SourceStreamEvent[]) {
        evolveSource(state, e, BigInt(events.length));
        events.push(e);
      }
    };
    apply(decideSource(state, { type: 'deploy', accountId: 'u_1', config }));
    apply(decideSource(state, { type: 'finishTransition' }));
    for (let i = 0; i < runs; i++) {
      if (i === Math.floor(runs / 2)) {
        apply(decideSource(state, { type: 'update', config: { ...config, configuredProps: { n: 2 } } }));
        apply(decideSource(state, { type: 'finishTransition' }));
      }
      let n = 0;
      const result: ExecutionResult = {
        ok: true, logs: [], durationMs: 1,
        // Ids repeat, so "unique" refuses some; a few emits carry no id at all.
        emits: [{ event: { i }, meta: { id: i % 7 === 0 ? undefined : String(i % 150) } }],
        // Keys come back, one value is undefined (an event leaves it out), values of several sizes.
        dbWrites: [{ key: `k${i % 13}`, value: i % 11 === 0 ? undefined : { i, pad: 'x'.repeat(i % 40) } }],
      };
      apply(decideSource(state, {
        type: 'recordRun', trigger: 'http', requestId: `req-${i}`, result, dedupe: 'unique', runId: `run-${i}`,
        newEmitId: () => `e-${i}-${n++}`, now: 1_000 + i,
      }));
    }
    return events;
  }

  /** Everything a later decision can read, as plain data. */
  function view(s: SourceState) {
    return {
      ...s, db: [...s.db], dbSizes: [...s.dbSizes], handledRequests: s.handledRequests.toArray(),
    };
  }

  /** Through JSON, as the snapshot is stored. */
  const stored = (s: SourceState) => JSON.parse(JSON.stringify(sourceSnapshot(s))) as unknown;

  // Past 10,000 runs: the handled requests' ring has wrapped when the snapshot is taken.
  const events = history(10_500);

  it('a snapshot taken anywhere, restored and folded on, gives the state of the whole fold', () => {
    const whole = initialSourceState(SOURCE);
    events.forEach((e, i) => evolveSource(whole, e, BigInt(i)));
    for (const at of [0, 1, 2, 3, 500, 10_250, 20_000, events.length - 2, events.length - 1]) {
      const before = initialSourceState(SOURCE);
      for (let i = 0; i <= at; i++) evolveSource(before, events[i], BigInt(i));
      const restored = sourceStateFromSnapshot(stored(before), BigInt(at))!;
      expect(view(restored)).toEqual(view(before));
      for (let i = at + 1; i < events.length; i++) evolveSource(restored, events[i], BigInt(i));
      expect(view(restored)).toEqual(view(whole));
    }
    // The folds above did exercise what the snapshot keeps.
    expect(whole.handledRequests.has('req-0')).toBe(false);
    expect(whole.handledRequests.has('req-10499')).toBe(true);
    expect(whole.db.has('k0')).toBe(true);
    expect([...whole.db.values()]).toContain(undefined);
    expect(whole.dedupe.unique).toHaveLength(100);
  });

  it('a restored state decides the next run as the whole fold does (refused ids, seq, db, handled requests)', () => {
    const whole = initialSourceState(SOURCE);
    events.forEach((e, i) => evolveSource(whole, e, BigInt(i)));
    const restored = sourceStateFromSnapshot(stored(whole), whole.revision)!;
    const run = (s: SourceState, requestId: string) => decideSource(s, {
      type: 'recordRun', trigger: 'http', requestId, dedupe: 'unique', runId: 'next', newEmitId: () => 'next-emit', now: 99_999,
      result: { ok: true, logs: [], durationMs: 1, emits: [{ event: {}, meta: { id: '149' } }, { event: {}, meta: { id: 'new' } }], dbWrites: [] },
    });
    expect(run(restored, 'req-new')).toEqual(run(whole, 'req-new'));
    expect(run(restored, 'req-10400')).toEqual({ rejected: { code: 'already_handled', message: 'request req-10400 already ran' } });
    expect(run(whole, 'req-10400')).toEqual(run(restored, 'req-10400'));
  });

  it('copies: folding on into the state does not change a snapshot taken before', () => {
    const s = initialSourceState(SOURCE);
    events.slice(0, 100).forEach((e, i) => evolveSource(s, e, BigInt(i)));
    const snap = sourceSnapshot(s);
    const json = JSON.stringify(snap);
    events.slice(100, 300).forEach((e, i) => evolveSource(s, e, BigInt(100 + i)));
    expect(JSON.stringify(snap)).toBe(json);
  });

  it('refuses a snapshot of another format or shape (the caller then folds from the first event)', () => {
    const s = initialSourceState(SOURCE);
    events.slice(0, 50).forEach((e, i) => evolveSource(s, e, BigInt(i)));
    const good = stored(s) as Record<string, unknown>;
    expect(sourceStateFromSnapshot(good, 49n)).toBeDefined();
    const bad: unknown[] = [
      null, 'x', [], { ...good, format: SOURCE_SNAPSHOT_FORMAT + 1 }, { ...good, format: undefined }, { ...good, status: 'gone' },
      { ...good, db: {} }, { ...good, db: [['k', 1]] }, { ...good, dedupe: null }, { ...good, dedupe: { unique: [1] } },
      { ...good, handledRequests: 'r1' }, { ...good, handledRequests: [1] }, { ...good, emitSeq: -1 }, { ...good, emitSeq: 1.5 },
      { ...good, config: 'c' },
    ];
    for (const b of bad) expect(sourceStateFromSnapshot(b, 49n)).toBeUndefined();
  });
});

describe('RecentIds.toArray', () => {
  it('lists the ids oldest first, before and after the ring wraps', () => {
    const ids = new RecentIds(4);
    ids.add('a');
    ids.add('b');
    expect(ids.toArray()).toEqual(['a', 'b']);
    for (const id of ['c', 'd', 'e', 'f']) ids.add(id);
    expect(ids.toArray()).toEqual(['c', 'd', 'e', 'f']);
    ids.add('g');
    expect(ids.toArray()).toEqual(['d', 'e', 'f', 'g']);
  });
});
