import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { EventTypes } from '@app/domain';
import type { NewSluiceEvent } from '@app/domain';
import { SqliteEventStore } from '@app/event-store';
import { CheckpointStore, ProcessorRunner } from '@app/processing';
import { deliveryIdFor, READ_MODEL_DEFERRED_INDEXES, READ_MODEL_VERSION, ReadModelsProjection } from '@app/projections';

/** Every `rm_` table's rows (ordered by every column: row order on disk is not content) and every index of the schema. */
function snapshot(db: Database.Database): { tables: Record<string, unknown[]>; indexes: string[]; checkpoint: unknown } {
  const names = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rm\\_%' ESCAPE '\\' ORDER BY name").all() as { name: string }[])
    .map((r) => r.name);
  const tables: Record<string, unknown[]> = {};
  for (const name of names) {
    const columns = (db.prepare(`PRAGMA table_info(${name})`).all() as { name: string }[]).map((c) => c.name);
    tables[name] = db.prepare(`SELECT * FROM ${name} ORDER BY ${columns.map((_, i) => i + 1).join(', ')}`).all();
  }
  const indexes = (db.prepare("SELECT name || ': ' || coalesce(sql, '') AS s FROM sqlite_master WHERE type = 'index' AND tbl_name LIKE 'rm\\_%' ESCAPE '\\' ORDER BY name")
    .all() as { s: string }[]).map((r) => r.s);
  const checkpoint = db.prepare("SELECT position FROM checkpoints WHERE name = 'read-models'").get();
  return { tables, indexes, checkpoint };
}

const SOURCES = ['dc_a', 'dc_b', 'dc_c'];

/** Emits from this iteration on are recorded as today's are, with ordered delivery ids (and UUID emit ids); the ones before as older records were. */
const ORDERED_FROM = 165;

/** A UUIDv8-shaped emit id whose first 48 bits grow with `n`, as emit ids derived from requests do. */
function uuidEmitId(n: number): string {
  const hex = (1_700_000_000_000 + n * 7).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}-8${(n % 4096).toString(16).padStart(3, '0')}-9abc-${n.toString(16).padStart(12, '0')}`;
}

/**
 * A log that exercises what the fold reads back while it folds: subscriptions created and deleted
 * midway (which webhooks an emit goes to), `$logs` deliveries (the source's account), outcomes
 * that fail then succeed, cleared and trimmed source events, a webhook deleted with its deliveries.
 */
function story(): { stream: string; events: NewSluiceEvent[] }[] {
  const out: { stream: string; events: NewSluiceEvent[] }[] = [];
  let at = 1_700_000_000_000;
  const push = (stream: string, type: string, data: unknown, atOverride?: number) => {
    at += 7;
    out.push({ stream, events: [{ type, data, metadata: { at: atOverride ?? at } } as NewSluiceEvent] });
  };
  /** Pushes of later iterations: `after(n, f)` runs f in iteration n, after its run and before its outcomes (often in another batch of a small rebuild). */
  const later = new Map<number, (() => void)[]>();
  const after = (n: number, f: () => void) => later.set(n, [...(later.get(n) ?? []), f]);
  for (const s of SOURCES) {
    push(`source-${s}`, EventTypes.sourceDeployRequested, {
      sourceId: s, accountId: 'u_1', componentId: 'sc_1', name: s, nameSlug: s, configuredProps: {}, active: true,
    });
  }
  push('webhook-wh_1', EventTypes.webhookCreated, { webhookId: 'wh_1', accountId: 'u_1', url: 'https://a.example/1', name: 'one', description: '', secret: { $sealed: 's1' } });
  push('webhook-wh_2', EventTypes.webhookCreated, { webhookId: 'wh_2', accountId: 'u_1', url: 'https://a.example/2', name: 'two', description: '', secret: { $sealed: 's2' } });
  push('subscriptions', EventTypes.subscriptionCreated, { subscriptionId: 'sub_1', accountId: 'u_1', emitterId: 'dc_a', listenerId: 'wh_1', eventName: '' });
  push('subscriptions', EventTypes.subscriptionCreated, { subscriptionId: 'sub_2', accountId: 'u_1', emitterId: 'dc_*', listenerId: 'wh_2', eventName: '$logs' });
  // A source listening to another: its dispatches are named like the deliveries (and stay pending here).
  push('subscriptions', EventTypes.subscriptionCreated, { subscriptionId: 'sub_l', accountId: 'u_1', emitterId: 'dc_a', listenerId: 'dc_c', eventName: '' });
  for (let n = 0; n < 330; n++) {
    const s = SOURCES[n % SOURCES.length];
    const ordered = n >= ORDERED_FROM;
    const emitId = ordered ? uuidEmitId(n) : `em_${n}`;
    const naming = ordered ? { deliveryIds: 'ordered' } : {};
    if (n === 100) push('subscriptions', EventTypes.subscriptionCreated, { subscriptionId: 'sub_3', accountId: 'u_1', emitterId: 'dc_*', listenerId: 'wh_2', eventName: '' });
    if (n === 200) push('subscriptions', EventTypes.subscriptionDeleted, { subscriptionId: 'sub_1', accountId: 'u_1', reason: 'test' });
    if (n === 250) push(`source-dc_b`, EventTypes.sourceEventsCleared, { sourceId: 'dc_b' });
    push(`inbox-${s}`, EventTypes.httpRequestReceived, { sourceId: s, requestId: `q${n}`, method: 'POST', path: '/', query: {}, headers: {}, bodyRaw: '{}', body: { n } });
    push(`source-${s}`, EventTypes.sourceEventEmitted, {
      sourceId: s, accountId: 'u_1', emitId, runId: `run_${n}`, summaryId: `${1_700_000_000 + n}-${n}`, event: { n }, meta: n % 5 === 0 ? { name: 'odd' } : {}, ...naming,
    });
    push(`source-${s}`, EventTypes.sourceRunCompleted, {
      sourceId: s, runId: `run_${n}`, trigger: 'http', requestId: `q${n}`, ok: true, emitted: 1, durationMs: 1,
      logs: n % 4 === 0 ? [{ level: 'log', message: `run ${n}`, ts: n }] : [],
    });
    if (n % 19 === 2) {
      // The same emit folded again a few iterations later (the row stands as first scheduled),
      // then an outcome after it: the row may be written in an earlier batch than the outcome's.
      const again = { sourceId: s, accountId: 'u_1', emitId, runId: `run_${n}`, summaryId: `${1_700_000_000 + n}-${n}`, event: { n }, meta: {}, ...naming };
      const deliveryId = deliveryIdFor(emitId, 'wh_2', ordered);
      after(n + 2, () => {
        push(`source-${s}`, EventTypes.sourceEventEmitted, again);
        push(`delivery-wh_2`, EventTypes.deliveryAttemptFailed, {
          deliveryId, webhookId: 'wh_2', attempt: 3, statusCode: 502, error: 'HTTP 502', durationMs: 5, nextAttemptAt: at + 1_000,
        });
        if (n % 2 === 0) push(`delivery-wh_2`, EventTypes.deliveryRetryRequested, { deliveryId, webhookId: 'wh_2' });
      });
    }
    for (const f of later.get(n) ?? []) f();
    for (const wh of ['wh_1', 'wh_2']) {
      const deliveryId = deliveryIdFor(emitId, wh, ordered);
      if (n % 11 === 5) {
        // Exhausted (an error text with quotes, a line end, a control character and non-ASCII),
        // retried by an operator, then delivered; the retry of a delivered one changes nothing.
        push(`delivery-${wh}`, EventTypes.deliveryExhausted, { deliveryId, webhookId: wh, attempt: 1, statusCode: 503, error: 'HTTP 503 "busy"\n\u0001 é ✓', durationMs: 4 });
        push(`delivery-${wh}`, EventTypes.deliveryRetryRequested, { deliveryId, webhookId: wh });
        push(`delivery-${wh}`, EventTypes.deliverySucceeded, { deliveryId, webhookId: wh, attempt: 2, statusCode: 204, durationMs: 1 });
        push(`delivery-${wh}`, EventTypes.deliveryRetryRequested, { deliveryId, webhookId: wh });
        continue;
      }
      if (n % 23 === 9) {
        // Exhausted, then retried by an operator: pending again, due at the retry's time.
        push(`delivery-${wh}`, EventTypes.deliveryExhausted, { deliveryId, webhookId: wh, attempt: 1, statusCode: 500, error: 'HTTP 500', durationMs: 4 });
        push(`delivery-${wh}`, EventTypes.deliveryRetryRequested, { deliveryId, webhookId: wh });
        continue;
      }
      if (n % 17 === 8) {
        // An outcome recorded twice (the same attempt time): its attempt is in the row once.
        const t = at + 1;
        push(`delivery-${wh}`, EventTypes.deliveryAttemptFailed, { deliveryId, webhookId: wh, attempt: 1, statusCode: 500, error: 'HTTP 500', durationMs: 3, nextAttemptAt: t + 5 }, t);
        push(`delivery-${wh}`, EventTypes.deliveryAttemptFailed, { deliveryId, webhookId: wh, attempt: 1, statusCode: 500, error: 'HTTP 500', durationMs: 3, nextAttemptAt: t + 5 }, t);
        // Its retry, a few iterations later (often in a later batch of a small rebuild).
        after(n + 3, () => push(`delivery-${wh}`, EventTypes.deliverySucceeded, { deliveryId, webhookId: wh, attempt: 2, statusCode: 200, durationMs: 2 }));
        continue;
      }
      if (n % 3 === 0) {
        push(`delivery-${wh}`, EventTypes.deliveryAttemptFailed, { deliveryId, webhookId: wh, attempt: 1, statusCode: 500, error: 'HTTP 500', durationMs: 3, nextAttemptAt: at + 60_000 });
      }
      if (n % 7 !== 0) push(`delivery-${wh}`, EventTypes.deliverySucceeded, { deliveryId, webhookId: wh, attempt: 2, statusCode: 200, durationMs: 2 });
    }
  }
  push('webhook-wh_1', EventTypes.webhookDeleted, { webhookId: 'wh_1', accountId: 'u_1' });
  push(`inbox-dc_c`, EventTypes.httpRequestReceived, { sourceId: 'dc_c', requestId: 'q-last', method: 'GET', path: '/', query: {}, headers: {}, bodyRaw: '', body: null });
  return out;
}

describe('ReadModelsProjection.rebuild (real SQLite file, the same log folded both ways)', () => {
  let dir: string;
  let store: SqliteEventStore;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-rebuild-'));
    store = new SqliteEventStore({ file: join(dir, 'sluice.db'), synchronous: 'normal' });
    // Appended a few at a time, as requests do: the incremental fold sees many small batches.
    const appends = story();
    for (let i = 0; i < appends.length; i += 5) {
      await Promise.all(appends.slice(i, i + 5).map((a) => store.append(a.stream, a.events, { expectedRevision: 'any' })));
    }
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The incremental build: the runner the server uses, from position 0. */
  async function foldIncrementally(): Promise<ReadModelsProjection> {
    const projection = new ReadModelsProjection(store.db);
    const runner = new ProcessorRunner(store, new CheckpointStore(store.db), {
      name: projection.name, transactional: true,
      apply: (events) => projection.apply(events),
      afterCommit: () => projection.discardCreatedDeliveries(),
    });
    runner.start();
    await runner.caughtUp();
    await runner.stop();
    return projection;
  }

  it('gives every rm_ table the rows of the incremental build, with every index, whatever the batch size', async () => {
    const projection = await foldIncrementally();
    const incremental = snapshot(store.db);
    // The story reached every part of the fold it is meant to.
    expect(incremental.tables.rm_deliveries.length).toBeGreaterThan(200);
    expect(incremental.tables.rm_deliveries.some((d) => (d as { event_name: string }).event_name === '$logs')).toBe(true);
    expect(incremental.tables.rm_source_events.length).toBeGreaterThan(0);
    const rows = incremental.tables.rm_deliveries as { status: string; attempts: string }[];
    expect(rows.some((d) => d.status === 'pending' && JSON.parse(d.attempts).length === 1)).toBe(true); // retried after exhausted
    expect(rows.some((d) => d.attempts.includes('busy'))).toBe(true); // the awkward error text
    expect(rows.some((d) => JSON.parse(d.attempts).length === 3)).toBe(true); // an outcome after a second schedule
    // Deliveries of both namings found their outcomes: the older ones' ids are uuidv5, random;
    // today's start with their emit id's timestamp.
    const named = incremental.tables.rm_deliveries as { id: string; emit_id: string; status: string; event_name: string }[];
    const ofOrdered = named.filter((d) => d.event_name !== '$logs' && !d.emit_id.startsWith('em_'));
    const ofOlder = named.filter((d) => d.emit_id.startsWith('em_'));
    expect(ofOrdered.length).toBeGreaterThan(100);
    expect(ofOrdered.every((d) => d.id.slice(0, 13) === d.emit_id.slice(0, 13) && d.id[14] === '8')).toBe(true);
    expect(ofOrdered.filter((d) => d.status === 'delivered').length).toBeGreaterThan(40);
    expect(ofOlder.every((d) => d.id[14] === '5')).toBe(true);
    expect(ofOlder.filter((d) => d.status === 'delivered').length).toBeGreaterThan(40);
    const dispatches = incremental.tables.rm_listener_dispatches as { dispatch_id: string; emit_id: string }[];
    const dispatchesOfOrdered = dispatches.filter((d) => !d.emit_id.startsWith('em_'));
    expect(dispatchesOfOrdered.length).toBeGreaterThan(20);
    expect(dispatchesOfOrdered.every((d) => d.dispatch_id.slice(0, 13) === d.emit_id.slice(0, 13))).toBe(true);
    expect(dispatches.filter((d) => d.emit_id.startsWith('em_')).every((d) => d.dispatch_id[14] === '5')).toBe(true);
    expect(dispatches.length).toBeGreaterThan(dispatchesOfOrdered.length + 20);

    for (const batch of [1, 7, 500, 50_000]) {
      const head = await projection.rebuild((after, max) => store.readLogSync(after, max), { batch });
      expect(head).toBe(await store.headPosition());
      expect(snapshot(store.db)).toEqual(incremental);
    }
    expect(store.db.prepare("SELECT value FROM rm_meta WHERE key = 'version'").get()).toEqual({ value: String(READ_MODEL_VERSION) });
    // The connection's own settings are back, and the WAL was checkpointed into the file.
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    expect(store.db.pragma('synchronous', { simple: true })).toBe(1);
    expect(READ_MODEL_DEFERRED_INDEXES.length).toBeGreaterThan(0);
  });

  it('checkpoints a WAL grown beyond its limit between transactions, and still gives the same rows', async () => {
    const projection = await foldIncrementally();
    const incremental = snapshot(store.db);
    const walSizes: number[] = [];
    const wal = join(dir, 'sluice.db-wal');
    await projection.rebuild((after, max) => {
      walSizes.push(statSync(wal).size);
      return store.readLogSync(after, max);
    }, { batch: 50, walLimitBytes: 64 * 1024 });
    expect(snapshot(store.db)).toEqual(incremental);
    // Truncated midway: some read saw a WAL smaller than one before it.
    expect(walSizes.some((size, i) => i > 0 && size < walSizes[i - 1])).toBe(true);
  });

  it('never writes the database file before it finished (only the WAL), and a rebuild cut short starts over at the next open', async () => {
    const projection = await foldIncrementally();
    const incremental = snapshot(store.db);
    const file = join(dir, 'sluice.db');
    const hashes: string[] = [];
    let reads = 0;
    await expect(projection.rebuild((after, max) => {
      hashes.push(createHash('sha256').update(readFileSync(file)).digest('hex'));
      if (++reads === 40) throw new Error('killed');
      return store.readLogSync(after, max);
    }, { batch: 10 })).rejects.toThrow('killed');
    expect(new Set(hashes).size).toBe(1);
    // Batches before the failure committed: the read models are partial, and marked so.
    expect(store.db.prepare("SELECT value FROM rm_meta WHERE key = 'version'").get()).toEqual({ value: 'rebuilding' });
    expect(Number((store.db.prepare("SELECT position FROM checkpoints WHERE name = 'read-models'").get() as { position: number }).position)).toBeGreaterThan(0);

    // The next open sees another version: everything dropped, and the runner replays from 0.
    await foldIncrementally();
    expect(snapshot(store.db)).toEqual(incremental);
  });
});
