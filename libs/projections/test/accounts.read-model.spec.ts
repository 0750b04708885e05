import { EventTypes } from '@app/domain';
import { AccountsReadModel } from '../src/read-models/accounts.read-model';
import { databaseWith, fold, rows, T0, TestLog } from './read-model-harness';

describe('AccountsReadModel', () => {
  const setup = () => {
    const db = databaseWith(AccountsReadModel.definition);
    return { db, model: new AccountsReadModel(db), log: new TestLog() };
  };

  it('given an account created with a key, then both rows exist and the key is live', () => {
    const { db, model, log } = setup();
    fold(db, model, [
      log.event(EventTypes.accountCreated, { accountId: 'u_1', name: 'default' }),
      log.event(EventTypes.apiKeyIssued, { accountId: 'u_1', keyId: 'key_1', keyHash: 'h1', prefix: 'sk_abcd' }),
    ]);
    expect(rows(db, 'SELECT * FROM rm_accounts')).toEqual([{ id: 'u_1', name: 'default', created_at: T0 / 1000 + 1, pos: 1 }]);
    expect(rows(db, 'SELECT * FROM rm_api_keys')).toEqual([
      { key_hash: 'h1', key_id: 'key_1', account_id: 'u_1', prefix: 'sk_abcd', revoked: 0, created_at: T0 / 1000 + 2 },
    ]);
  });

  it('when a key is revoked, then it stays listed, revoked, and other keys are untouched', () => {
    const { db, model, log } = setup();
    fold(db, model, [
      log.event(EventTypes.accountCreated, { accountId: 'u_1', name: 'default' }),
      log.event(EventTypes.apiKeyIssued, { accountId: 'u_1', keyId: 'key_1', keyHash: 'h1', prefix: 'sk_1' }),
      log.event(EventTypes.apiKeyIssued, { accountId: 'u_1', keyId: 'key_2', keyHash: 'h2', prefix: 'sk_2' }),
    ]);
    fold(db, model, [log.event(EventTypes.apiKeyRevoked, { accountId: 'u_1', keyId: 'key_1' })]);
    expect(rows(db, 'SELECT key_id, revoked FROM rm_api_keys ORDER BY key_id')).toEqual([
      { key_id: 'key_1', revoked: 1 }, { key_id: 'key_2', revoked: 0 },
    ]);
  });

  it('ignores event types it does not fold', () => {
    const { model } = setup();
    expect(Object.keys(model.handlers).sort()).toEqual([EventTypes.apiKeyIssued, EventTypes.apiKeyRevoked, EventTypes.accountCreated].sort());
  });
});
