import { EventTypes, SourceEventEmitted } from '@app/domain';
import { deliveryIdFor, DeliveriesReadModel } from '../src/read-models/deliveries.read-model';
import { SubscriptionsReadModel } from '../src/read-models/subscriptions.read-model';
import { databaseWith, fold, rows, T0, TestLog } from './read-model-harness';

describe('DeliveriesReadModel', () => {
  /** The schedule reads subscriptions, so the subscriptions read model folds the same log. */
  const setup = () => {
    const db = databaseWith(SubscriptionsReadModel.definition, DeliveriesReadModel.definition);
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
      body: '{"n":1}', status: 'pending', attempts: '[]', next_attempt_at: T0 + 6000, created_at: T0 + 6000, pos: 6,
    })));
    expect(model.takeCreated().map((d) => d.webhookId).sort()).toEqual(['wh_1', 'wh_2']);
    fold(db, model, [e]);
    expect(model.takeCreated()).toEqual([]);
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
});
