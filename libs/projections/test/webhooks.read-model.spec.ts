import { EventTypes } from '@app/domain';
import { WebhooksReadModel } from '../src/read-models/webhooks.read-model';
import { databaseWith, fold, rows, T0, TestLog } from './read-model-harness';

describe('WebhooksReadModel', () => {
  const setup = () => {
    const db = databaseWith(WebhooksReadModel.definition);
    const log = new TestLog();
    const model = new WebhooksReadModel(db);
    fold(db, model, [log.event(EventTypes.webhookCreated, {
      webhookId: 'wh_1', accountId: 'u_1', url: 'https://a.example/hook', name: 'A', description: 'first', secret: { $sealed: 's1' },
    })]);
    return { db, model, log };
  };
  const row = (db: ReturnType<typeof setup>['db']) => rows(db, 'SELECT * FROM rm_webhooks')[0];

  it('given a webhook created, then it is active with its sealed secret and no previous one', () => {
    const { db } = setup();
    expect(row(db)).toEqual({
      id: 'wh_1', account_id: 'u_1', url: 'https://a.example/hook', name: 'A', description: 'first', active: 1,
      secret: JSON.stringify({ $sealed: 's1' }), prev_secret: null, prev_valid_until: null,
      created_at: T0 / 1000 + 1, updated_at: T0 / 1000 + 1, pos: 1,
    });
  });

  it('when updated in part, then only the given fields change', () => {
    const { db, model, log } = setup();
    fold(db, model, [log.event(EventTypes.webhookUpdated, { webhookId: 'wh_1', name: 'B', active: false })]);
    expect(row(db)).toMatchObject({ url: 'https://a.example/hook', name: 'B', description: 'first', active: 0, updated_at: T0 / 1000 + 2 });
    fold(db, model, [log.event(EventTypes.webhookUpdated, { webhookId: 'wh_1', active: true })]);
    expect(row(db)).toMatchObject({ name: 'B', active: 1 });
  });

  it('when its secret is rotated, then the old one is kept as previous until the given time', () => {
    const { db, model, log } = setup();
    fold(db, model, [log.event(EventTypes.webhookSecretRotated, { webhookId: 'wh_1', secret: { $sealed: 's2' }, previousValidUntil: T0 + 86_400_000 })]);
    expect(row(db)).toMatchObject({
      secret: JSON.stringify({ $sealed: 's2' }), prev_secret: JSON.stringify({ $sealed: 's1' }), prev_valid_until: T0 + 86_400_000,
    });
  });

  it('when a rotation is folded again, then the row stays as after the first (the new secret is not copied into previous)', () => {
    const { db, model, log } = setup();
    const rotated = log.event(EventTypes.webhookSecretRotated, { webhookId: 'wh_1', secret: { $sealed: 's2' }, previousValidUntil: T0 + 86_400_000 });
    fold(db, model, [rotated]);
    const once = row(db);
    fold(db, model, [rotated]);
    expect(row(db)).toEqual(once);
    expect(once).toMatchObject({ secret: JSON.stringify({ $sealed: 's2' }), prev_secret: JSON.stringify({ $sealed: 's1' }) });
    // A later rotation still rotates.
    fold(db, model, [log.event(EventTypes.webhookSecretRotated, { webhookId: 'wh_1', secret: { $sealed: 's3' }, previousValidUntil: T0 + 2 * 86_400_000 })]);
    expect(row(db)).toMatchObject({ secret: JSON.stringify({ $sealed: 's3' }), prev_secret: JSON.stringify({ $sealed: 's2' }) });
  });

  it('when deleted, then its row is gone', () => {
    const { db, model, log } = setup();
    fold(db, model, [log.event(EventTypes.webhookDeleted, { webhookId: 'wh_1', accountId: 'u_1' })]);
    expect(rows(db, 'SELECT * FROM rm_webhooks')).toEqual([]);
  });
});
