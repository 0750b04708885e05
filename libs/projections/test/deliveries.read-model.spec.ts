import { EventTypes, SourceConfig, SourceEventEmitted, SourceRunCompleted, WorkflowEventEmitted } from '@app/domain';
import { uuidv5like } from '@app/event-store';
import { deliveryIdFor, DeliveriesReadModel } from '../src/read-models/deliveries.read-model';
import { SourcesReadModel } from '../src/read-models/sources.read-model';
import { SubscriptionsReadModel } from '../src/read-models/subscriptions.read-model';
import Database from 'better-sqlite3';
import { DELIVERY_SCHEDULE_SQL, ReadModelQueries } from '../src/read-model-queries';
import { ReadModelsProjection } from '../src/read-models.projection';
import { databaseWith, fold, queriesOver, recordInLog, rows, T0, TestLog } from './read-model-harness';

describe('DeliveriesReadModel', () => {
  /**
   * The schedule reads subscriptions (and, for `$logs`, the source's account), so those read
   * models fold the same log.
   */
  const setup = () => {
    const db = databaseWith(SubscriptionsReadModel.definition, SourcesReadModel.definition, DeliveriesReadModel.definition);
    const subscriptions = new SubscriptionsReadModel(db);
    const model = new DeliveriesReadModel(db);
    const log = new TestLog();
    fold(db, subscriptions, [
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_1', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'wh_1', eventName: 'orders' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_2', accountId: 'u_1', emitterId: 'dc_*', listenerId: 'wh_2', eventName: 'orders' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_3', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'wh_2', eventName: 'orders' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_4', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'dc_9', eventName: 'orders' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_5', accountId: 'u_2', emitterId: 'dc_*', listenerId: 'wh_3', eventName: 'orders' }),
    ]);
    return { db, model, log };
  };
  const emit = (log: TestLog, name = 'orders'): ReturnType<TestLog['event']> => {
    const data: SourceEventEmitted = { sourceId: 'dc_1', accountId: 'u_1', emitId: 'em_1', runId: 'run', summaryId: '1-0', event: { n: 1 }, meta: { name } };
    return log.event(EventTypes.sourceEventEmitted, data);
  };
  const delivery = (db: ReturnType<typeof setup>['db'], webhookId: string) =>
    rows(db, 'SELECT status, attempts, next_attempt_at FROM rm_deliveries WHERE id = ?', deliveryIdFor('em_1', webhookId))[0];

  it('given an emit, then one pending delivery per subscribed webhook of its account, created once however often it is folded', () => {
    const { db, model, log } = setup();
    const e = emit(log);
    fold(db, model, [e]);
    expect(rows(db, 'SELECT * FROM rm_deliveries ORDER BY webhook_id')).toEqual(['wh_1', 'wh_2'].map((wh) => ({
      id: deliveryIdFor('em_1', wh), webhook_id: wh, account_id: 'u_1', emit_id: 'em_1', emitter_id: 'dc_1', event_name: 'orders',
      status: 'pending', attempts: '[]', next_attempt_at: T0 + 6000, created_at: T0 + 6000, pos: 6,
    })));
    // The sender gets the body with the new delivery; a retry reads it from the emit at `pos`.
    expect(model.takeCreated().map((d) => [d.webhookId, d.body]).sort()).toEqual([['wh_1', '{"n":1}'], ['wh_2', '{"n":1}']]);
    recordInLog(db, [e]);
    expect(queriesOver(db).deliveryBody(6)).toBe('{"n":1}');
    fold(db, model, [e]);
    expect(model.takeCreated()).toEqual([]);
  });

  it('given an emit recorded with ordered delivery ids, then its deliveries\' ids start with its timestamp, and outcomes find them', () => {
    const { db, model, log } = setup();
    const emitId = '0191a2b3-c4d6-8123-9456-789abcdef012';
    const data: SourceEventEmitted = {
      sourceId: 'dc_1', accountId: 'u_1', emitId, runId: 'run', summaryId: '1-0', event: { n: 1 }, meta: { name: 'orders' }, deliveryIds: 'ordered',
    };
    fold(db, model, [log.event(EventTypes.sourceEventEmitted, data)]);
    const ids = (rows(db, 'SELECT id FROM rm_deliveries ORDER BY webhook_id') as { id: string }[]).map((r) => r.id);
    expect(ids).toEqual([deliveryIdFor(emitId, 'wh_1', true), deliveryIdFor(emitId, 'wh_2', true)]);
    expect(ids.every((id) => id.startsWith('0191a2b3-c4d6-8'))).toBe(true);
    expect(ids).not.toContain(deliveryIdFor(emitId, 'wh_1'));
    expect(model.takeCreated().map((d) => d.deliveryId).sort()).toEqual([...ids].sort());
    fold(db, model, [log.event(EventTypes.deliverySucceeded, { deliveryId: ids[0], webhookId: 'wh_1', attempt: 1, statusCode: 200, durationMs: 2 })]);
    expect(rows(db, 'SELECT webhook_id, status FROM rm_deliveries ORDER BY webhook_id')).toEqual([
      { webhook_id: 'wh_1', status: 'delivered' }, { webhook_id: 'wh_2', status: 'pending' },
    ]);
  });

  it('given an emit on a channel nobody subscribed to, then nothing is scheduled', () => {
    const { db, model, log } = setup();
    fold(db, model, [emit(log, 'other')]);
    expect(rows(db, 'SELECT * FROM rm_deliveries')).toEqual([]);
  });

  it('when attempts fail, then succeed, then each outcome is appended once and the status follows', () => {
    const { db, model, log } = setup();
    fold(db, model, [emit(log)]);
    const failed = log.event(EventTypes.deliveryAttemptFailed, {
      deliveryId: deliveryIdFor('em_1', 'wh_1'), webhookId: 'wh_1', attempt: 1, statusCode: 500, error: 'HTTP 500', durationMs: 3, nextAttemptAt: T0 + 60_000,
    });
    fold(db, model, [failed, failed]);
    expect(delivery(db, 'wh_1')).toEqual({
      status: 'failed', next_attempt_at: T0 + 60_000,
      attempts: JSON.stringify([{ at: T0 + 7000, status_code: 500, duration_ms: 3, error: 'HTTP 500' }]),
    });
    fold(db, model, [log.event(EventTypes.deliverySucceeded, { deliveryId: deliveryIdFor('em_1', 'wh_1'), webhookId: 'wh_1', attempt: 2, statusCode: 200, durationMs: 4 })]);
    expect(delivery(db, 'wh_1')).toMatchObject({ status: 'delivered', next_attempt_at: null });
    expect(JSON.parse(delivery(db, 'wh_1').attempts as string)).toHaveLength(2);
  });

  it('when a delivery is exhausted and a retry is requested, then it is pending again; a delivered one is not retried', () => {
    const { db, model, log } = setup();
    fold(db, model, [
      emit(log),
      log.event(EventTypes.deliveryExhausted, { deliveryId: deliveryIdFor('em_1', 'wh_2'), webhookId: 'wh_2', attempt: 8, error: 'timeout', durationMs: 9 }),
      log.event(EventTypes.deliverySucceeded, { deliveryId: deliveryIdFor('em_1', 'wh_1'), webhookId: 'wh_1', attempt: 1, statusCode: 204, durationMs: 1 }),
    ]);
    expect(delivery(db, 'wh_2')).toMatchObject({ status: 'exhausted', next_attempt_at: null });
    fold(db, model, [
      log.event(EventTypes.deliveryRetryRequested, { deliveryId: deliveryIdFor('em_1', 'wh_2'), webhookId: 'wh_2' }),
      log.event(EventTypes.deliveryRetryRequested, { deliveryId: deliveryIdFor('em_1', 'wh_1'), webhookId: 'wh_1' }),
    ]);
    expect(delivery(db, 'wh_2')).toMatchObject({ status: 'pending', next_attempt_at: T0 + 9000 });
    expect(delivery(db, 'wh_1')).toMatchObject({ status: 'delivered' });
  });

  it('when an outcome names an unknown delivery, then nothing changes', () => {
    const { db, model, log } = setup();
    fold(db, model, [log.event(EventTypes.deliverySucceeded, { deliveryId: 'nope', webhookId: 'wh_1', attempt: 1, statusCode: 200, durationMs: 1 })]);
    expect(rows(db, 'SELECT * FROM rm_deliveries')).toEqual([]);
  });

  it('when a webhook is deleted, then its deliveries go, and a discarded batch hands nothing to the sender', () => {
    const { db, model, log } = setup();
    fold(db, model, [emit(log)]);
    model.discard();
    expect(model.takeCreated()).toEqual([]);
    fold(db, model, [log.event(EventTypes.webhookDeleted, { webhookId: 'wh_1', accountId: 'u_1' })]);
    expect(rows(db, 'SELECT webhook_id FROM rm_deliveries')).toEqual([{ webhook_id: 'wh_2' }]);
  });

  describe('workflows as emitters', () => {
    const workflowEmit = (log: TestLog, workflowId: string, accountId = 'u_1', name?: string) => {
      const data: WorkflowEventEmitted = {
        workflowId, accountId, runId: 'run_1', emitId: `wem_${workflowId}`, event: { done: true }, meta: name === undefined ? {} : { name },
      };
      return log.event(EventTypes.workflowEventEmitted, data);
    };
    /** The deliveries read model over a log holding these subscriptions: [account, emitter, webhook, channel]. */
    const subscribed = (subs: [string, string, string, string][]) => {
      const db = databaseWith(SubscriptionsReadModel.definition, SourcesReadModel.definition, DeliveriesReadModel.definition);
      const subscriptions = new SubscriptionsReadModel(db);
      const model = new DeliveriesReadModel(db);
      const log = new TestLog();
      fold(db, subscriptions, subs.map(([accountId, emitterId, listenerId, eventName], i) =>
        log.event(EventTypes.subscriptionCreated, { subscriptionId: `s${i + 1}`, accountId, emitterId, listenerId, eventName })));
      return { db, model, log };
    };

    it('given subscriptions to p_1 and to p_*, when p_1 emits, then each subscribed webhook of the account gets one delivery', () => {
      const { db, model, log } = subscribed([
        ['u_1', 'p_1', 'wh_1', ''], ['u_1', 'p_*', 'wh_2', ''], ['u_2', 'p_*', 'wh_3', ''], ['u_1', 'dc_*', 'wh_4', ''], ['u_1', 'p_1', 'wh_5', '$errors'],
      ]);
      const emits = [workflowEmit(log, 'p_1'), workflowEmit(log, 'p_2')];
      fold(db, model, emits);
      recordInLog(db, emits);
      const queries = queriesOver(db);
      const scheduled = rows<{ webhook_id: string; emitter_id: string; event_name: string; pos: number }>(
        db, 'SELECT webhook_id, emitter_id, event_name, pos FROM rm_deliveries ORDER BY pos, webhook_id');
      expect(scheduled.map(({ pos, ...r }) => ({ ...r, body: queries.deliveryBody(pos) }))).toEqual([
        { webhook_id: 'wh_1', emitter_id: 'p_1', event_name: '', body: '{"done":true}' },
        { webhook_id: 'wh_2', emitter_id: 'p_1', event_name: '', body: '{"done":true}' },
        { webhook_id: 'wh_2', emitter_id: 'p_2', event_name: '', body: '{"done":true}' },
      ]);
      expect(model.takeCreated().map((d) => [d.webhookId, d.emitterId, d.body])).toEqual(
        [['wh_1', 'p_1', '{"done":true}'], ['wh_2', 'p_1', '{"done":true}'], ['wh_2', 'p_2', '{"done":true}']]);
    });

    it('given a webhook subscribed to $errors of a workflow, when the run fails, then the failure is delivered on that channel', () => {
      const { db, model, log } = subscribed([['u_1', 'p_1', 'wh_1', '$errors']]);
      fold(db, model, [workflowEmit(log, 'p_1', 'u_1', '$errors')]);
      expect(rows(db, 'SELECT id, event_name FROM rm_deliveries')).toEqual([{ id: deliveryIdFor('wem_p_1', 'wh_1'), event_name: '$errors' }]);
    });

    it('given a workflow emit recorded with ordered delivery ids, then its deliveries\' ids start with the emit id\'s time; without, they are uuidv5 as before', () => {
      const { db, model, log } = subscribed([['u_1', 'p_1', 'wh_1', ''], ['u_1', 'p_*', 'wh_2', '']]);
      const ordered = '019aef3d-dc00-833b-b6c4-ed110f8c97ae';
      const random = '5f0c9d2e-1b3a-5c4d-8e6f-7a8b9c0d1e2f';
      const emitOf = (emitId: string, deliveryIds?: 'ordered') => log.event(EventTypes.workflowEventEmitted, {
        workflowId: 'p_1', accountId: 'u_1', runId: 'run_1', emitId, event: { n: 1 }, meta: {}, ...(deliveryIds ? { deliveryIds } : {}),
      } satisfies WorkflowEventEmitted);
      fold(db, model, [emitOf(ordered, 'ordered'), emitOf(random)]);
      const ids = rows<{ id: string; emit_id: string; webhook_id: string }>(db, 'SELECT id, emit_id, webhook_id FROM rm_deliveries ORDER BY emit_id, webhook_id');
      expect(ids).toEqual([
        { id: deliveryIdFor(ordered, 'wh_1', true), emit_id: ordered, webhook_id: 'wh_1' },
        { id: deliveryIdFor(ordered, 'wh_2', true), emit_id: ordered, webhook_id: 'wh_2' },
        { id: deliveryIdFor(random, 'wh_1'), emit_id: random, webhook_id: 'wh_1' },
        { id: deliveryIdFor(random, 'wh_2'), emit_id: random, webhook_id: 'wh_2' },
      ]);
      expect(ids.slice(0, 2).map((r) => r.id.slice(0, 13))).toEqual(['019aef3d-dc00', '019aef3d-dc00']);
      expect(ids[2].id).toBe(uuidv5like('sluice.delivery', `${random}/wh_1`));
    });
  });

  describe('the $logs channel of sources', () => {
    const config: SourceConfig = { componentId: 'sc_1', name: 'one', nameSlug: 'one', configuredProps: {}, active: true };
    const runCompleted = (log: TestLog, logs: SourceRunCompleted['logs'], runId = 'run_1') =>
      log.event(EventTypes.sourceRunCompleted, {
        sourceId: 'dc_1', runId, trigger: 'http', requestId: 'req_1', ok: true, logs, emitted: 0, durationMs: 2,
      });

    it('given a webhook subscribed to $logs of a source, when a run logs, then one delivery carries the run\'s logs; a silent run none', () => {
      const db = databaseWith(SubscriptionsReadModel.definition, SourcesReadModel.definition, DeliveriesReadModel.definition);
      const subscriptions = new SubscriptionsReadModel(db);
      const sources = new SourcesReadModel(db);
      const model = new DeliveriesReadModel(db);
      const log = new TestLog();
      fold(db, sources, [log.event(EventTypes.sourceDeployRequested, { sourceId: 'dc_1', accountId: 'u_1', ...config })]);
      fold(db, subscriptions, [
        log.event(EventTypes.subscriptionCreated, { subscriptionId: 's1', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'wh_1', eventName: '$logs' }),
        log.event(EventTypes.subscriptionCreated, { subscriptionId: 's2', accountId: 'u_1', emitterId: 'dc_*', listenerId: 'wh_2', eventName: '$logs' }),
        log.event(EventTypes.subscriptionCreated, { subscriptionId: 's3', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'wh_3', eventName: '' }),
      ]);
      const run = runCompleted(log, [{ level: 'log', message: 'hello', ts: 5 }, { level: 'error', message: 'oops', ts: 6 }]);
      const silent = runCompleted(log, [], 'run_2');
      fold(db, model, [run, run, silent]);
      const emitId = uuidv5like('sluice.logs-emit', 'run_1');
      const body = JSON.stringify({ run_id: 'run_1', trigger: 'http', ok: true, logs: [{ level: 'log', message: 'hello', ts: 5 }, { level: 'error', message: 'oops', ts: 6 }] });
      expect(rows(db, 'SELECT id, webhook_id, emit_id, emitter_id, event_name, pos FROM rm_deliveries ORDER BY webhook_id')).toEqual(['wh_1', 'wh_2'].map((wh) => ({
        id: deliveryIdFor(emitId, wh), webhook_id: wh, emit_id: emitId, emitter_id: 'dc_1', event_name: '$logs', pos: Number(run.position),
      })));
      expect(model.takeCreated().map((d) => d.body)).toEqual([body, body]);
      recordInLog(db, [run, silent]);
      const queries = queriesOver(db);
      expect(queries.deliveryBody(Number(run.position))).toBe(body);
      // A position whose event makes no delivery (a silent run), or none at all, has no body.
      expect(queries.deliveryBody(Number(silent.position))).toBeUndefined();
      expect(queries.deliveryBody(999)).toBeUndefined();
    });
  });

  it('keeps its rows in the B-tree of their ids (WITHOUT ROWID): an outcome and a look-up by id search it, and a webhook\'s listing reads rows from it', () => {
    // One B-tree fewer than a rowid table with an id index: each commit that schedules or records
    // deliveries writes one page fewer (issue 10; `BENCH_ONLY=wal npm run bench`).
    const db = new Database(':memory:');
    new ReadModelsProjection(db);
    expect(() => db.prepare('SELECT rowid FROM rm_deliveries').all()).toThrow(/no such column: rowid/);
    const plan = (sql: string, ...args: unknown[]) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((r) => r.detail).join(' | ');
    expect(plan("UPDATE rm_deliveries SET status = 'delivered' WHERE id = ?", 'x')).toBe('SEARCH rm_deliveries USING PRIMARY KEY (id=?)');
    expect(plan('SELECT * FROM rm_deliveries WHERE id = ?', 'x')).toBe('SEARCH rm_deliveries USING PRIMARY KEY (id=?)');
    expect(plan('SELECT * FROM rm_deliveries WHERE webhook_id = ? ORDER BY pos DESC LIMIT 10', 'wh_1'))
      .toBe('SEARCH rm_deliveries USING INDEX rm_deliveries_webhook (webhook_id=?)');
  });

  describe('the schedule the sender polls (ReadModelQueries over rm_deliveries_due)', () => {
    it('given pending, failed and delivered deliveries, then only the pending and failed are due, and every schedule query searches the partial index', () => {
      const db = new Database(':memory:');
      const projection = new ReadModelsProjection(db);
      const queries = queriesOver(db);
      const log = new TestLog();
      const emitted = (emitId: string) => log.event(EventTypes.sourceEventEmitted, {
        sourceId: 'dc_1', accountId: 'u_1', emitId, runId: 'run', summaryId: `${T0}-${emitId.charCodeAt(3)}`, event: { emitId }, meta: {},
      });
      const id = (emitId: string) => deliveryIdFor(emitId, 'wh_1');
      db.transaction(() => projection.apply([
        log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_1', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'wh_1', eventName: '' }),
        emitted('em_a'), emitted('em_b'), emitted('em_c'),
        log.event(EventTypes.deliverySucceeded, { deliveryId: id('em_a'), webhookId: 'wh_1', attempt: 1, statusCode: 200, durationMs: 1 }),
        log.event(EventTypes.deliveryAttemptFailed, {
          deliveryId: id('em_b'), webhookId: 'wh_1', attempt: 1, statusCode: 500, error: 'HTTP 500', durationMs: 1, nextAttemptAt: T0 + 60_000,
        }),
      ]))();
      // em_c is pending since its emit (T0 + 4 s), em_b failed and is retried at T0 + 60 s.
      expect(queries.dueDeliveries(T0 + 100_000, 10, 10).map((d) => d.id).sort()).toEqual([id('em_b'), id('em_c')].sort());
      expect(queries.dueDeliveries(T0 + 10_000, 10, 10).map((d) => d.id)).toEqual([id('em_c')]);
      expect(queries.nextDeliveryDueAfter(T0)).toBe(T0 + 4000);
      expect(queries.nextDeliveryDueAfter(T0 + 4000)).toBe(T0 + 60_000);
      expect(queries.nextDeliveryDueAfter(T0 + 60_000)).toBeUndefined();
      for (const [name, sql] of Object.entries(DELIVERY_SCHEDULE_SQL)) {
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...sql.split('?').slice(1).map(() => 0)) as { detail: string }[])
          .map((r) => r.detail).join(' | ');
        expect(`${name}: ${plan}`).toContain('INDEX rm_deliveries_due');
        expect(`${name}: ${plan}`).not.toContain('SCAN rm_deliveries');
      }
    });
  });
});
