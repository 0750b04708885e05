import { EventTypes, MAX_LISTENER_HOPS, SourceConfig, SourceEventEmitted, SourceRunCompleted } from '@app/domain';
import { uuidv5like } from '@app/event-store';
import { dispatchIdFor, ListenerDispatchesReadModel } from '../src/read-models/listener-dispatches.read-model';
import { SourcesReadModel } from '../src/read-models/sources.read-model';
import { SubscriptionsReadModel } from '../src/read-models/subscriptions.read-model';
import { ReadModelQueries } from '../src/read-model-queries';
import { READ_MODEL_SCHEMA } from '../src/read-model-schema';
import { databaseWith, fold, rows, T0, TestLog } from './read-model-harness';

describe('ListenerDispatchesReadModel', () => {
  const config: SourceConfig = { componentId: 'sc_1', name: 'one', nameSlug: 'one', configuredProps: {}, active: true };

  /** Pending rows read subscriptions and (for `$logs`) the source's account: those read models fold the same log. */
  const setup = (allTables = false) => {
    const db = allTables ? databaseWith({ tables: [], schema: READ_MODEL_SCHEMA }) : databaseWith(SubscriptionsReadModel.definition, SourcesReadModel.definition, ListenerDispatchesReadModel.definition);
    const subscriptions = new SubscriptionsReadModel(db);
    const sources = new SourcesReadModel(db);
    const model = new ListenerDispatchesReadModel(db);
    const log = new TestLog();
    fold(db, sources, [log.event(EventTypes.sourceDeployRequested, { sourceId: 'dc_1', accountId: 'u_1', ...config })]);
    fold(db, subscriptions, [
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 's1', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'dc_2', eventName: '' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 's2', accountId: 'u_1', emitterId: 'dc_*', listenerId: 'p_1', eventName: '' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 's3', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'wh_1', eventName: '' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 's4', accountId: 'u_2', emitterId: 'dc_*', listenerId: 'dc_9', eventName: '' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 's5', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'dc_3', eventName: '$logs' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 's6', accountId: 'u_1', emitterId: 'p_*', listenerId: 'dc_2', eventName: 'done' }),
    ]);
    return { db, model, log };
  };
  const emit = (log: TestLog, extra: Partial<SourceEventEmitted> = {}) => {
    const data: SourceEventEmitted = {
      sourceId: 'dc_1', accountId: 'u_1', emitId: 'em_1', runId: 'run_0', summaryId: '1-0', event: { n: 1 }, meta: {}, ...extra,
    };
    return log.event(EventTypes.sourceEventEmitted, data);
  };
  const runOf = (log: TestLog, sourceId: string, requestId: string | undefined, logs: SourceRunCompleted['logs'] = [], hops?: number) =>
    log.event(EventTypes.sourceRunCompleted, {
      sourceId, runId: `run_${requestId ?? 'x'}`, trigger: 'event', requestId, ok: true, logs, emitted: 0, durationMs: 1, ...(hops ? { hops } : {}),
    });

  it('given dc_ and p_ listeners, when a source emits, then one pending row per listener of the account (never a webhook), once however often folded', () => {
    const { db, model, log } = setup();
    const e = emit(log);
    fold(db, model, [e, e]);
    expect(rows(db, 'SELECT * FROM rm_listener_dispatches ORDER BY listener_id')).toEqual(['dc_2', 'p_1'].map((listener) => ({
      dispatch_id: dispatchIdFor('em_1', listener), listener_id: listener, account_id: 'u_1', emit_id: 'em_1', emitter_id: 'dc_1',
      event_name: '', body: '{"n":1}', hops: 0, ts: T0 + 8000, pos: 8,
    })));
    expect(model.takeCreated().map((d) => d.listenerId)).toEqual(['dc_2', 'p_1']);
    expect(model.takeCreated()).toEqual([]);
  });

  it('when the listening source\'s run names the dispatch as its request, then the row is settled; other runs leave it', () => {
    const { db, model, log } = setup();
    fold(db, model, [emit(log), runOf(log, 'dc_2', 'some-http-request'), runOf(log, 'dc_2', undefined)]);
    expect(rows(db, 'SELECT listener_id FROM rm_listener_dispatches ORDER BY listener_id')).toEqual([{ listener_id: 'dc_2' }, { listener_id: 'p_1' }]);
    fold(db, model, [runOf(log, 'dc_2', dispatchIdFor('em_1', 'dc_2'))]);
    expect(rows(db, 'SELECT listener_id FROM rm_listener_dispatches')).toEqual([{ listener_id: 'p_1' }]);
  });

  it('given an emit recorded with ordered ids, then its dispatches\' ids start with its timestamp, and the listener\'s run settles its row', () => {
    const { db, model, log } = setup();
    const emitId = '0191a2b3-c4d6-8123-9456-789abcdef012';
    fold(db, model, [emit(log, { emitId, deliveryIds: 'ordered' })]);
    const ids = (rows(db, 'SELECT dispatch_id FROM rm_listener_dispatches ORDER BY listener_id') as { dispatch_id: string }[]).map((r) => r.dispatch_id);
    expect(ids).toEqual([dispatchIdFor(emitId, 'dc_2', true), dispatchIdFor(emitId, 'p_1', true)]);
    expect(ids.every((id) => id.startsWith('0191a2b3-c4d6-8'))).toBe(true);
    expect(ids).not.toContain(dispatchIdFor(emitId, 'dc_2'));
    fold(db, model, [runOf(log, 'dc_2', ids[0])]);
    expect(rows(db, 'SELECT listener_id FROM rm_listener_dispatches')).toEqual([{ listener_id: 'p_1' }]);
  });

  it('when a listening workflow\'s run starts naming the dispatch, then the row is settled; a start without one (an older build\'s) leaves it', () => {
    const { db, model, log } = setup();
    const start = (runId: string, dispatchId?: string) => log.event(EventTypes.workflowRunStarted, {
      runId, workflowId: 'p_1', accountId: 'u_1', workflowVersion: 1, steps: [], customResponse: false,
      trigger: { event: { n: 1 }, context: { emitter_id: 'dc_1', emit_id: 'em_1', ts: T0, trigger: 'emitter' } },
      ...(dispatchId ? { dispatchId } : {}),
    });
    fold(db, model, [emit(log), start('run_old')]);
    expect(rows(db, 'SELECT listener_id FROM rm_listener_dispatches ORDER BY listener_id')).toEqual([{ listener_id: 'dc_2' }, { listener_id: 'p_1' }]);
    fold(db, model, [start('run_new', dispatchIdFor('em_1', 'p_1'))]);
    expect(rows(db, 'SELECT listener_id FROM rm_listener_dispatches')).toEqual([{ listener_id: 'dc_2' }]);
  });

  it('when listener.dispatched is recorded (a workflow started, or skipped), then the row is settled', () => {
    const { db, model, log } = setup();
    fold(db, model, [
      emit(log),
      log.event(EventTypes.listenerDispatched, { dispatchId: dispatchIdFor('em_1', 'p_1'), listenerId: 'p_1', emitId: 'em_1', outcome: 'started' }),
    ]);
    expect(rows(db, 'SELECT listener_id FROM rm_listener_dispatches')).toEqual([{ listener_id: 'dc_2' }]);
  });

  it(`given an emit that already carries ${MAX_LISTENER_HOPS} hops, then no listener hears it (a cycle ends); one hop less still dispatches with its hops`, () => {
    const { db, model, log } = setup();
    fold(db, model, [emit(log, { emitId: 'em_cap', hops: MAX_LISTENER_HOPS }), emit(log, { emitId: 'em_below', hops: MAX_LISTENER_HOPS - 1 })]);
    expect(rows(db, 'SELECT emit_id, hops FROM rm_listener_dispatches ORDER BY listener_id')).toEqual([
      { emit_id: 'em_below', hops: MAX_LISTENER_HOPS - 1 }, { emit_id: 'em_below', hops: MAX_LISTENER_HOPS - 1 },
    ]);
  });

  it('given a workflow emit, then p_* subscriptions of its account hear it on its channel', () => {
    const { db, model, log } = setup();
    fold(db, model, [
      log.event(EventTypes.workflowEventEmitted, { workflowId: 'p_7', accountId: 'u_1', runId: 'r', emitId: 'wem_1', event: { ok: 1 }, meta: { name: 'done' }, hops: 2 }),
      log.event(EventTypes.workflowEventEmitted, { workflowId: 'p_8', accountId: 'u_2', runId: 'r', emitId: 'wem_2', event: { ok: 1 }, meta: { name: 'done' } }),
    ]);
    expect(rows(db, 'SELECT dispatch_id, listener_id, emitter_id, event_name, hops FROM rm_listener_dispatches')).toEqual([
      { dispatch_id: dispatchIdFor('wem_1', 'dc_2'), listener_id: 'dc_2', emitter_id: 'p_7', event_name: 'done', hops: 2 },
    ]);
  });

  it('given a source listening to $logs, when a run logs, then one row carries the run\'s logs with the run\'s hops', () => {
    const { db, model, log } = setup();
    fold(db, model, [runOf(log, 'dc_1', 'req_1', [{ level: 'log', message: 'hi', ts: 3 }], 3), runOf(log, 'dc_1', 'req_2', [])]);
    const emitId = uuidv5like('sluice.logs-emit', 'run_req_1');
    expect(rows(db, 'SELECT dispatch_id, listener_id, emit_id, event_name, body, hops FROM rm_listener_dispatches')).toEqual([{
      dispatch_id: dispatchIdFor(emitId, 'dc_3'), listener_id: 'dc_3', emit_id: emitId, event_name: '$logs', hops: 3,
      body: JSON.stringify({ run_id: 'run_req_1', trigger: 'event', ok: true, logs: [{ level: 'log', message: 'hi', ts: 3 }] }),
    }]);
  });

  it('when a listening source is deleted, then its pending rows go; a rolled-back batch hands nothing to the dispatcher', () => {
    const { db, model, log } = setup();
    fold(db, model, [emit(log)]);
    model.discard();
    expect(model.takeCreated()).toEqual([]);
    fold(db, model, [log.event(EventTypes.sourceDeleted, { sourceId: 'dc_2', accountId: 'u_1' })]);
    expect(rows(db, 'SELECT listener_id FROM rm_listener_dispatches')).toEqual([{ listener_id: 'p_1' }]);
  });

  it('the queue stays oldest first by rowid after its newest rows were settled, and is read without a sort or an index on pos', () => {
    const { db, model, log } = setup(true);
    const q = new ReadModelQueries(db);
    fold(db, model, [emit(log, { emitId: 'em_1' }), emit(log, { emitId: 'em_2' })]);
    // em_2's rows hold the largest rowids; settled, their rowids are free to be given again.
    const em2 = rows<{ dispatch_id: string }>(db, "SELECT dispatch_id FROM rm_listener_dispatches WHERE emit_id = 'em_2'");
    fold(db, model, em2.map((r) => log.event(EventTypes.listenerDispatched, { dispatchId: r.dispatch_id, listenerId: 'x', emitId: 'em_2', outcome: 'started' })));
    fold(db, model, [emit(log, { emitId: 'em_3' }), emit(log, { emitId: 'em_4' })]);
    expect(q.pendingListenerDispatches().map((r) => r.emit_id)).toEqual(['em_1', 'em_1', 'em_3', 'em_3', 'em_4', 'em_4']);
    expect(q.pendingListenerDispatches().map((r) => r.pos)).toEqual([...q.pendingListenerDispatches().map((r) => r.pos)].sort((a, b) => a - b));
    expect(rows(db, "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'rm_listener_dispatches' AND sql IS NOT NULL ORDER BY name"))
      .toEqual([{ name: 'rm_listener_dispatches_listener' }]);
    const plan = (db.prepare('EXPLAIN QUERY PLAN SELECT * FROM rm_listener_dispatches ORDER BY rowid LIMIT 10').all() as { detail: string }[])
      .map((p) => p.detail).join(' | ');
    expect(plan).not.toContain('TEMP B-TREE');
  });

  it('pending rows are read oldest first, passing over the listeners and accounts given; one listener\'s by its own index', () => {
    const { db, model, log } = setup(true);
    // em_1 and em_2 of u_1 (listeners dc_2 and p_1), then em_3 of u_2's source (listener dc_9), then em_4 of u_1.
    fold(db, model, [
      emit(log, { emitId: 'em_1' }), emit(log, { emitId: 'em_2' }),
      emit(log, { sourceId: 'dc_8', accountId: 'u_2', emitId: 'em_3' }), emit(log, { emitId: 'em_4' }),
    ]);
    const q = new ReadModelQueries(db);
    const pairs = (rs: { emit_id: string; listener_id: string }[]) => rs.map((r) => `${r.emit_id}>${r.listener_id}`);
    expect(q.pendingListenerDispatches().map((r) => r.emit_id)).toEqual(['em_1', 'em_1', 'em_2', 'em_2', 'em_3', 'em_4', 'em_4']);
    expect(pairs(q.pendingListenerDispatches(-1, { listeners: ['dc_2'], accounts: [] }))).toEqual(['em_1>p_1', 'em_2>p_1', 'em_3>dc_9', 'em_4>p_1']);
    expect(pairs(q.pendingListenerDispatches(3, { listeners: [], accounts: ['u_1'] }))).toEqual(['em_3>dc_9']);
    expect(pairs(q.pendingListenerDispatches(2, { listeners: ['p_1'], accounts: ['u_2'] }))).toEqual(['em_1>dc_2', 'em_2>dc_2']);
    expect(pairs(q.pendingListenerDispatchesOf('p_1'))).toEqual(['em_1>p_1', 'em_2>p_1', 'em_4>p_1']);
    expect(pairs(q.pendingListenerDispatchesOf('p_1', 2))).toEqual(['em_1>p_1', 'em_2>p_1']);
    // The listener's query is answered by the (listener_id, pos) index, not by sorting its rows.
    const plan = db.prepare("EXPLAIN QUERY PLAN SELECT * FROM rm_listener_dispatches WHERE listener_id = 'p_1' ORDER BY pos, dispatch_id LIMIT 2").all() as { detail: string }[];
    expect(plan.map((p) => p.detail).join(' | ')).toContain('rm_listener_dispatches_listener');
  });
});
