import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentDefinition, SecretBox, SluiceEvent, SourceConfig, Streams } from '@app/domain';
import { SqliteEventStore } from '@app/event-store';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import { SourceActor, SourceActorDeps } from './source-actor';
import { SqliteSourceSnapshots } from './source-snapshots';

/**
 * Snapshots of a source actor's state, on a real SQLite store: the first turn after a restart
 * (a new actor on the same file) folds the snapshot and the events after it, and decides exactly
 * as an actor that folds the whole stream. The component is a counter in its `db` with deduped
 * emits; the sandbox is replaced by that counter's logic, the store and the snapshots are real.
 */
describe('SourceActor snapshots', () => {
  const SOURCE = 'dc_snapshots';
  const definition: ComponentDefinition = {
    name: 'Counter', version: '1.0.0', type: 'source', dedupe: 'unique', hooks: [], methods: [], hasRun: true,
    props: [{ name: 'http', type: '$.interface.http' }, { name: 'db', type: '$.service.db' }],
  };
  const config: SourceConfig = { componentId: 'sc_counter', name: 'counter', nameSlug: 'counter', configuredProps: {}, active: true, endpointKey: 'k1' };
  const box = new SecretBox(randomBytes(32));
  let dir: string;
  let store: SqliteEventStore<SluiceEvent>;
  let snapshots: SqliteSourceSnapshots;
  /** What each invocation saw of the db's count and of its key `lie` (only ever put there by a forged snapshot), in order. */
  let seen: unknown[];
  let lies: unknown[];

  /** The counter: counts runs in `db.count`, emits the count with an id that repeats every 40 runs. */
  async function counter(inv: SandboxInvocation): Promise<SandboxResult> {
    const db = inv.db ?? {};
    const count = ((db.count as number | undefined) ?? 0) + 1;
    seen.push(db.count);
    lies.push(db.lie);
    return {
      ok: true, logs: [], durationMs: 0, cpuMs: 0,
      emits: [{ event: { count }, meta: { id: String(count % 40) } }],
      dbWrites: [{ key: 'count', value: count }, { key: `pad-${count % 5}`, value: 'x'.repeat(count % 50) }],
    };
  }

  function actor(over: Partial<SourceActorDeps> = {}): SourceActor {
    return new SourceActor(SOURCE, {
      store, box, publicUrl: () => 'http://sluice.test', maxDbBytesPerSource: 1024 * 1024,
      component: () => ({ definition, bundle: '', codeHash: 'hash' }),
      invoke: (inv) => counter(inv),
      snapshots, snapshotEvery: 25,
      ...over,
    });
  }

  async function runs(a: SourceActor, from: number, to: number) {
    const out = [];
    for (let n = from; n < to; n++) out.push(await a.run('http', { n }, `req-${n}`));
    return out;
  }

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-snapshots-'));
    store = new SqliteEventStore<SluiceEvent>({ file: join(dir, 'sluice.db'), synchronous: 'normal' });
    snapshots = new SqliteSourceSnapshots(store.db);
    seen = [];
    lies = [];
    const first = actor();
    await first.deploy('u_1', config, 'u_1');
    // 100 runs of 2 or 3 events each: snapshots every 25 events at least.
    await runs(first, 0, 100);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The fromRevision of each read of the source's stream from now on. */
  function readsFrom(on: SqliteEventStore<SluiceEvent>): () => bigint[] {
    const spy = jest.spyOn(on, 'readStream');
    return () => spy.mock.calls.filter(([stream]) => stream === Streams.source(SOURCE)).map(([, o]) => o?.fromRevision ?? 0n);
  }

  /** What a turn decided, without its timings. */
  const decided = (o: Awaited<ReturnType<SourceActor['run']>>) => o && { ok: o.result.ok, emitted: o.emitted.map((e) => ({ id: e.emitId, event: e.event, meta: e.meta })) };

  it('is written after the events it covers, and names the event at its revision', async () => {
    const snap = snapshots.get(SOURCE)!;
    expect(snap).toBeDefined();
    const head = await store.streamRevision(Streams.source(SOURCE));
    // Taken at least every 25 events, so within the last 25 + one run's events.
    expect(head - snap.revision).toBeLessThan(28n);
    const [at] = await store.readStream(Streams.source(SOURCE), { fromRevision: snap.revision, maxCount: 1 });
    expect(at.id).toBe(snap.eventId);
    expect(JSON.parse(snap.state)).toMatchObject({ format: 1, status: 'deployed', db: expect.arrayContaining([{ key: 'count', value: expect.any(Number) }]) });
  });

  it('a new actor folds the snapshot and the events after it, and decides as one that folds the whole stream', async () => {
    // Two copies of the same log: one read with its snapshot, one without.
    await store.close();
    copyFileSync(join(dir, 'sluice.db'), join(dir, 'copy.db'));
    const copy = new SqliteEventStore<SluiceEvent>({ file: join(dir, 'copy.db'), synchronous: 'normal' });
    store = new SqliteEventStore<SluiceEvent>({ file: join(dir, 'sluice.db'), synchronous: 'normal' });
    snapshots = new SqliteSourceSnapshots(store.db);
    const snap = snapshots.get(SOURCE)!;
    const reads = readsFrom(store);
    const copyReads = readsFrom(copy);
    const restarted = actor();
    const whole = actor({ store: copy, snapshots: undefined });
    try {
      // New requests; one whose emit id is among the last 40 (refused by "unique"); requests already handled.
      const inputs = [100, 101, 60, 99, 102, 0];
      const fromSnapshot = [];
      const fromWhole = [];
      for (const n of inputs) {
        seen = [];
        fromSnapshot.push({ outcome: decided(await restarted.run('http', { n }, `req-${n}`)), db: seen });
        seen = [];
        fromWhole.push({ outcome: decided(await whole.run('http', { n }, `req-${n}`)), db: seen });
      }
      expect(fromSnapshot).toEqual(fromWhole);
      // The count went on from the restored db, the handled requests were refused.
      expect(fromSnapshot.map((r) => r.db[0])).toEqual([100, 101, undefined, undefined, 102, undefined]);
      expect(fromSnapshot.map((r) => r.outcome === undefined)).toEqual([false, false, true, true, false, true]);
      // The snapshot's own event (to check it against the log), then the tail: never from revision 0.
      expect(reads().length).toBeGreaterThan(0);
      expect(reads().every((from) => from >= snap.revision)).toBe(true);
      expect(copyReads()[0]).toBe(0n);
    } finally {
      await copy.close();
    }
  });

  it('a snapshot the log does not hold (another event at its revision, or past the end) is dropped, and the stream folded from the start', async () => {
    const snap = snapshots.get(SOURCE)!;
    for (const wrong of [{ ...snap, eventId: 'not-this-one' }, { ...snap, revision: snap.revision + 1000n }]) {
      snapshots.put(SOURCE, wrong);
      const reads = readsFrom(store);
      seen = [];
      const restarted = actor();
      await restarted.run('http', { n: 'x' }, `req-x-${wrong.eventId}-${wrong.revision}`);
      expect(reads()).toContain(0n);
      jest.restoreAllMocks();
      // Folded from the log, not from the wrong snapshot: the count is right.
      expect(typeof seen[0]).toBe('number');
      expect(snapshots.get(SOURCE)?.eventId).not.toBe('not-this-one');
    }
  });

  it('a snapshot that does not parse, or of another format, is dropped; the state comes from the log', async () => {
    const snap = snapshots.get(SOURCE)!;
    const parsed = JSON.parse(snap.state) as { db: unknown[] };
    const lied = { ...parsed, db: [...parsed.db, { key: 'lie', value: 'from the snapshot' }] };
    for (const state of ['{not json', JSON.stringify({ ...lied, format: 99 })]) {
      snapshots.put(SOURCE, { ...snap, state });
      seen = [];
      lies = [];
      await actor().run('http', {}, `req-bad-${state.length}`);
      expect(seen[0]).toBe(100 + (state.length === 9 ? 0 : 1));
      expect(lies[0]).toBeUndefined();
    }
    // The same forgery in the current format is believed: proof that the state does come from the snapshot.
    snapshots.put(SOURCE, { ...snap, state: JSON.stringify(lied) });
    const reads = readsFrom(store);
    lies = [];
    await actor().run('http', {}, 'req-lied');
    expect(reads()).not.toContain(0n);
    expect(lies[0]).toBe('from the snapshot');
  });

  it('a snapshot that cannot be written now (a transaction is open) is taken again by a later turn', async () => {
    const restarted = actor();
    await runs(restarted, 100, 101);
    const before = snapshots.get(SOURCE)!;
    const put = jest.spyOn(snapshots, 'put');
    store.db.exec('BEGIN');
    // In a transaction of someone else's, the row is not written.
    expect(snapshots.put(SOURCE, { ...before, revision: before.revision + 1n })).toBe(false);
    store.db.exec('ROLLBACK');
    put.mockClear();
    put.mockImplementationOnce(() => false);
    await runs(restarted, 101, 140);
    const refused = put.mock.results.findIndex((r) => r.value === false);
    expect(refused).toBeGreaterThanOrEqual(0);
    // The turn right after the refused one wrote it, not one 25 events later.
    expect(put.mock.results[refused + 1]?.value).toBe(true);
    expect(put.mock.calls[refused + 1][1].revision - put.mock.calls[refused][1].revision).toBeLessThan(4n);
  });

  it('a large state is snapshotted less often: at most about 200 bytes of snapshot per event', async () => {
    let wroteBig = false;
    const restarted = actor({
      invoke: async (inv) => {
        const r = await counter(inv);
        // One run puts 100 KB in the db; every snapshot after it carries them.
        if (!wroteBig) r.dbWrites.push({ key: 'big', value: 'x'.repeat(100_000) });
        wroteBig = true;
        return r;
      },
    });
    const put = jest.spyOn(snapshots, 'put');
    await runs(restarted, 100, 400);
    const revisions = put.mock.calls.filter(([, s]) => s.state.length > 100_000).map(([, s]) => s.revision);
    // 900 events after the big write: one snapshot with it soon after, then one per ~500 events (100 KB / 200 B), not one per 25.
    expect(revisions.length).toBeGreaterThanOrEqual(2);
    expect(revisions.length).toBeLessThanOrEqual(3);
    for (let i = 1; i < revisions.length; i++) expect(revisions[i] - revisions[i - 1]).toBeGreaterThanOrEqual(500n);
  });

  it('a deleted source keeps no snapshot', async () => {
    expect(snapshots.get(SOURCE)).toBeDefined();
    await actor().delete(false, 'u_1');
    expect(snapshots.get(SOURCE)).toBeUndefined();
  });
});
