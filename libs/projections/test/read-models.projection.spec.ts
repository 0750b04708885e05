import Database from 'better-sqlite3';
import { EventTypes } from '@app/domain';
import type { StoredEvent } from '@app/event-store';
import { deliveryIdFor, READ_MODEL_TABLES, READ_MODEL_VERSION, ReadModelsProjection } from '@app/projections';
import { ReadModelQueries } from '../src/read-model-queries';
import { recordInLog, rows, TestLog } from './read-model-harness';

/** The composition: every read model folds the same batch in one transaction, through the public API the engine uses. */
describe('ReadModelsProjection', () => {
  const story = (log: TestLog) => [
    log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_1', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'wh_1', eventName: '' }),
    log.event(EventTypes.httpRequestReceived, { sourceId: 'dc_1', requestId: 'q1', method: 'GET', path: '/', query: {}, headers: {}, bodyRaw: '', body: null }),
    log.event(EventTypes.sourceDbSet, { sourceId: 'dc_1', key: 'k', value: 1 }),
    log.event(EventTypes.sourceEventEmitted, { sourceId: 'dc_1', accountId: 'u_1', emitId: 'em_1', runId: 'run', summaryId: '1-0', event: { n: 1 }, meta: {} }),
    log.event(EventTypes.sourceRunCompleted, { sourceId: 'dc_1', runId: 'run', trigger: 'http', requestId: 'q1', ok: true, logs: [], emitted: 1, durationMs: 1 }),
  ];

  it('given one batch, then every read model that folds an event has its rows, and the new delivery and emit are handed over once', () => {
    const db = new Database(':memory:');
    const projection = new ReadModelsProjection(db);
    projection.live = true;
    const unknown = { ...new TestLog().event(EventTypes.sourceDeployed, { sourceId: 'x' }), type: 'some.future_event.v1' } as StoredEvent;
    db.transaction(() => projection.apply([...story(new TestLog()), unknown]))();
    expect(rows(db, 'SELECT id FROM rm_subscriptions')).toEqual([{ id: 'sub_1' }]);
    expect(rows(db, 'SELECT emit_id FROM rm_source_events')).toEqual([{ emit_id: 'em_1' }]);
    expect(rows(db, 'SELECT kind FROM rm_source_logs')).toEqual([{ kind: 'run' }]);
    expect(rows(db, 'SELECT * FROM rm_pending_requests')).toEqual([]);
    expect(projection.takeCreatedDeliveries().map((d) => d.deliveryId)).toEqual([deliveryIdFor('em_1', 'wh_1')]);
    expect(projection.takeEmitted().map((e) => e.emitId)).toEqual(['em_1']);
    expect(projection.takeCreatedDeliveries()).toEqual([]);
    expect(projection.takeEmitted()).toEqual([]);
  });

  it('a kept summary is one B-tree, keyed by source and channel, and the listing of all channels searches it by source', () => {
    const db = new Database(':memory:');
    new ReadModelsProjection(db);
    const btrees = (table: string) => ({
      withoutRowid: (db.pragma(`table_list(${table})`) as { wr: number }[])[0].wr === 1,
      indexes: (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? ORDER BY name").all(table) as { name: string }[]).map((r) => r.name),
    });
    // A kept summary: one B-tree, by source and channel, which the listing of all channels sorts.
    expect(btrees('rm_source_events')).toEqual({ withoutRowid: true, indexes: [] });
    const plan = (sql: string) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all('dc_1', 10) as { detail: string }[]).map((r) => r.detail).join('; ');
    expect(plan('SELECT * FROM rm_source_events WHERE source_id = ? ORDER BY ms DESC, seq DESC LIMIT ?')).toMatch(/SEARCH rm_source_events USING PRIMARY KEY \(source_id=\?\)/);
  });

  it('an emit stored by several read models (its summary, a delivery, a dispatch) is serialised once, and each row holds the same text', () => {
    const db = new Database(':memory:');
    const projection = new ReadModelsProjection(db);
    const log = new TestLog();
    const payload = { text: 'caf\u00e9 "q"', nested: { list: [1, 2.5, null, true] } };
    const other = { n: 2 };
    const events = [
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_1', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'wh_1', eventName: '' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_2', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'dc_2', eventName: '' }),
      log.event(EventTypes.sourceEventEmitted, { sourceId: 'dc_1', accountId: 'u_1', emitId: 'em_1', runId: 'run', summaryId: '1-0', event: payload, meta: {} }),
      log.event(EventTypes.sourceEventEmitted, { sourceId: 'dc_1', accountId: 'u_1', emitId: 'em_2', runId: 'run', summaryId: '1-1', event: other, meta: {} }),
    ];
    const stringify = jest.spyOn(JSON, 'stringify');
    try {
      db.transaction(() => projection.apply(events))();
      expect(stringify.mock.calls.filter((c) => c[0] === payload)).toHaveLength(1);
      expect(stringify.mock.calls.filter((c) => c[0] === other)).toHaveLength(1);
    } finally {
      stringify.mockRestore();
    }
    const created = projection.takeCreatedDeliveries();
    recordInLog(db, events);
    const queries = new ReadModelQueries(db);
    for (const [emitId, value] of [['em_1', payload], ['em_2', other]] as const) {
      const text = JSON.stringify(value);
      // The summary and the delivery keep the emit's position, and read its text from the log.
      const { pos } = rows<{ pos: number }>(db, 'SELECT pos FROM rm_deliveries WHERE emit_id = ?', emitId)[0];
      expect(queries.deliveryBody(pos)).toBe(text);
      expect(created.filter((d) => d.emitId === emitId).map((d) => d.body)).toEqual([text]);
      expect(queries.sourceEvents('dc_1', 10).filter((r) => r.emit_id === emitId).map((r) => r.event)).toEqual([text]);
      expect(rows(db, 'SELECT body FROM rm_listener_dispatches WHERE emit_id = ?', emitId)).toEqual([{ body: text }]);
    }
  });

  it('when a batch rolls back, then its rows are gone and discarding forgets its deliveries and emits', () => {
    const db = new Database(':memory:');
    const projection = new ReadModelsProjection(db);
    projection.live = true;
    expect(() => db.transaction(() => {
      projection.apply(story(new TestLog()));
      throw new Error('checkpoint failed');
    })()).toThrow('checkpoint failed');
    projection.discardCreatedDeliveries();
    expect(projection.takeCreatedDeliveries()).toEqual([]);
    expect(projection.takeEmitted()).toEqual([]);
    expect(rows(db, 'SELECT * FROM rm_deliveries')).toEqual([]);
  });

  it('when a good run is rolled back over a failing source, then the same good run, folded again, still clears it', () => {
    const db = new Database(':memory:');
    const projection = new ReadModelsProjection(db);
    const log = new TestLog();
    const run = (ok: boolean) => log.event(EventTypes.sourceRunCompleted, {
      sourceId: 'dc_1', runId: 'run', trigger: 'manual', ok, logs: [], emitted: 0, durationMs: 1,
      ...(ok ? {} : { error: { name: 'Error', message: 'boom' } }),
    });
    const failing = () => rows<{ failing: number; last_error: string | null }>(db, 'SELECT failing, last_error FROM rm_sources')[0];
    db.transaction(() => projection.apply([
      log.event(EventTypes.sourceDeployRequested, { sourceId: 'dc_1', accountId: 'u_1', componentId: 'sc_1', name: 'a', nameSlug: 'a', configuredProps: {}, active: true }),
      run(true), run(false),
    ]))();
    expect(failing().failing).toBe(1);
    const good = run(true);
    expect(() => db.transaction(() => {
      projection.apply([good]);
      throw new Error('checkpoint failed');
    })()).toThrow('checkpoint failed');
    projection.discardCreatedDeliveries();
    expect(failing().failing).toBe(1);
    db.transaction(() => projection.apply([good]))();
    expect(failing()).toEqual({ failing: 0, last_error: null });
    db.transaction(() => projection.apply([run(false)]))();
    expect(failing().failing).toBe(1);
  });

  it('given a webhook and a listening source on one emitter, then an emit reaches both; once unsubscribed, the next reaches neither', () => {
    const db = new Database(':memory:');
    const projection = new ReadModelsProjection(db);
    const log = new TestLog();
    const emit = (emitId: string) => log.event(EventTypes.sourceEventEmitted, {
      sourceId: 'dc_1', accountId: 'u_1', emitId, runId: 'run', summaryId: emitId, event: { n: 1 }, meta: {},
    });
    db.transaction(() => projection.apply([
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_1', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'wh_1', eventName: '' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_2', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'dc_2', eventName: '' }),
      emit('em_1'),
      log.event(EventTypes.subscriptionDeleted, { subscriptionId: 'sub_1', accountId: 'u_1' }),
      log.event(EventTypes.subscriptionDeleted, { subscriptionId: 'sub_2', accountId: 'u_1' }),
      emit('em_2'),
    ]))();
    expect(projection.takeCreatedDeliveries().map((d) => d.emitId)).toEqual(['em_1']);
    expect(projection.takeCreatedDispatches().map((d) => [d.emitId, d.listenerId])).toEqual([['em_1', 'dc_2']]);
  });

  it('given read models of another version, then they are dropped with their checkpoint and rebuilt empty', () => {
    const db = new Database(':memory:');
    new ReadModelsProjection(db);
    db.transaction(() => new ReadModelsProjection(db).apply(story(new TestLog())))();
    db.prepare("INSERT INTO checkpoints (name, position) VALUES ('read-models', 5), ('sender', 5)").run();
    db.prepare("UPDATE rm_meta SET value = 'old' WHERE key = 'version'").run();
    new ReadModelsProjection(db);
    for (const table of READ_MODEL_TABLES) expect(rows(db, `SELECT * FROM ${table}`)).toEqual([]);
    expect(rows(db, 'SELECT name FROM checkpoints')).toEqual([{ name: 'sender' }]);
    expect(rows(db, "SELECT value FROM rm_meta WHERE key = 'version'")).toEqual([{ value: String(READ_MODEL_VERSION) }]);
  });

  describe('subscribers of an emit follow rm_subscriptions (they are cached between subscription changes)', () => {
    const emit = (log: TestLog, n: number) => log.event(EventTypes.sourceEventEmitted, {
      sourceId: 'dc_1', accountId: 'u_1', emitId: `em_${n}`, runId: `run_${n}`, summaryId: `${n}-0`, event: { n }, meta: {},
    });
    const subscribe = (log: TestLog, id: string, listenerId: string) =>
      log.event(EventTypes.subscriptionCreated, { subscriptionId: id, accountId: 'u_1', emitterId: 'dc_1', listenerId, eventName: '' });

    it('given a subscription created and deleted within one batch, then only the emits in between are delivered to it', () => {
      const db = new Database(':memory:');
      const projection = new ReadModelsProjection(db);
      const log = new TestLog();
      db.transaction(() => projection.apply([
        subscribe(log, 'sub_1', 'wh_1'), emit(log, 1),
        subscribe(log, 'sub_2', 'wh_2'), emit(log, 2),
        log.event(EventTypes.subscriptionDeleted, { subscriptionId: 'sub_1', accountId: 'u_1', reason: 'test' }), emit(log, 3),
      ]))();
      expect(rows(db, 'SELECT emit_id, webhook_id FROM rm_deliveries ORDER BY pos, webhook_id')).toEqual([
        { emit_id: 'em_1', webhook_id: 'wh_1' }, { emit_id: 'em_2', webhook_id: 'wh_1' }, { emit_id: 'em_2', webhook_id: 'wh_2' },
        { emit_id: 'em_3', webhook_id: 'wh_2' },
      ]);
    });

    it('given a batch that subscribed a webhook and rolled back, then a later emit is not delivered to it', () => {
      const db = new Database(':memory:');
      const projection = new ReadModelsProjection(db);
      const log = new TestLog();
      expect(() => db.transaction(() => {
        projection.apply([subscribe(log, 'sub_1', 'wh_1'), emit(log, 1)]);
        throw new Error('checkpoint failed');
      })()).toThrow('checkpoint failed');
      projection.discardCreatedDeliveries();
      db.transaction(() => projection.apply([emit(log, 2)]))();
      expect(rows(db, 'SELECT * FROM rm_deliveries')).toEqual([]);
    });
  });
});
