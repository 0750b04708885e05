import { EventTypes } from '@app/domain';
import { SubscriptionsReadModel } from '../src/read-models/subscriptions.read-model';
import { databaseWith, fold, rows, T0, TestLog } from './read-model-harness';

describe('SubscriptionsReadModel', () => {
  const setup = () => {
    const db = databaseWith(SubscriptionsReadModel.definition);
    return { db, model: new SubscriptionsReadModel(db), log: new TestLog() };
  };

  it('given subscriptions created and one deleted, then the others remain', () => {
    const { db, model, log } = setup();
    fold(db, model, [
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_1', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'wh_1', eventName: 'orders' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_2', accountId: 'u_1', emitterId: 'dc_*', listenerId: 'wh_2', eventName: '' }),
      log.event(EventTypes.subscriptionDeleted, { subscriptionId: 'sub_1', accountId: 'u_1', reason: 'test' }),
    ]);
    expect(rows(db, 'SELECT * FROM rm_subscriptions')).toEqual([
      { id: 'sub_2', account_id: 'u_1', emitter_id: 'dc_*', listener_id: 'wh_2', event_name: '', created_at: T0 / 1000 + 2, pos: 2 },
    ]);
  });

  it('given auto-subscriptions, when a webhook is deleted, then its auto-subscriptions go and its subscriptions wait for their own events', () => {
    const { db, model, log } = setup();
    fold(db, model, [
      log.event(EventTypes.autoSubscriptionCreated, { autoSubscriptionId: 'as_1', accountId: 'u_1', listenerId: 'wh_1', eventName: 'orders' }),
      log.event(EventTypes.autoSubscriptionCreated, { autoSubscriptionId: 'as_2', accountId: 'u_1', listenerId: 'wh_2', eventName: '' }),
      log.event(EventTypes.subscriptionCreated, { subscriptionId: 'sub_1', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'wh_1', eventName: 'orders' }),
    ]);
    expect(rows(db, 'SELECT id, pos FROM rm_auto_subscriptions ORDER BY id')).toEqual([{ id: 'as_1', pos: 1 }, { id: 'as_2', pos: 2 }]);
    fold(db, model, [log.event(EventTypes.webhookDeleted, { webhookId: 'wh_1', accountId: 'u_1' })]);
    expect(rows(db, 'SELECT id FROM rm_auto_subscriptions')).toEqual([{ id: 'as_2' }]);
    expect(rows(db, 'SELECT id FROM rm_subscriptions')).toEqual([{ id: 'sub_1' }]);
  });
});
