import { EventTypes } from '@app/domain';
import { AppsReadModel } from '../src/read-models/apps.read-model';
import { ConnectedAccountsReadModel } from '../src/read-models/connected-accounts.read-model';
import { databaseWith, fold, rows, T0, TestLog } from './read-model-harness';

describe('ConnectedAccountsReadModel', () => {
  const setup = () => {
    const db = databaseWith(ConnectedAccountsReadModel.definition);
    const log = new TestLog();
    const model = new ConnectedAccountsReadModel(db);
    fold(db, model, [log.event(EventTypes.connectedAccountCreated, {
      connectedAccountId: 'apn_1', accountId: 'u_1', app: 'github', name: 'work', credentials: { $sealed: 'c1' }, via: 'oauth',
      expiresAt: T0 + 3_600_000, refreshAt: T0 + 3_300_000, refreshable: true,
    })]);
    return { db, model, log };
  };
  const row = (db: ReturnType<typeof setup>['db']) => rows(db, 'SELECT * FROM rm_connected_accounts')[0];

  it('given an account connected, then it is healthy with its sealed credentials and token times', () => {
    const { db } = setup();
    expect(row(db)).toEqual({
      id: 'apn_1', account_id: 'u_1', app: 'github', name: 'work', credentials: JSON.stringify({ $sealed: 'c1' }),
      expires_at: T0 + 3_600_000, refresh_at: T0 + 3_300_000, refreshable: 1, healthy: 1, last_error: null,
      created_at: T0 / 1000 + 1, updated_at: T0 / 1000 + 1, pos: 1,
    });
  });

  it('when its tokens are refreshed, then the new sealed credentials and times replace the old ones', () => {
    const { db, model, log } = setup();
    fold(db, model, [log.event(EventTypes.connectedAccountTokensRefreshed, {
      connectedAccountId: 'apn_1', credentials: { $sealed: 'c2' }, expiresAt: T0 + 7_200_000, refreshAt: T0 + 6_900_000, refreshable: true,
    })]);
    expect(row(db)).toMatchObject({ credentials: JSON.stringify({ $sealed: 'c2' }), expires_at: T0 + 7_200_000, refresh_at: T0 + 6_900_000, name: 'work' });
  });

  it('when a refresh is refused, then it is unhealthy and due for no refresh; new credentials make it healthy again', () => {
    const { db, model, log } = setup();
    fold(db, model, [log.event(EventTypes.connectedAccountRefreshFailed, { connectedAccountId: 'apn_1', error: 'invalid_grant' })]);
    expect(row(db)).toMatchObject({ healthy: 0, last_error: 'invalid_grant' });
    expect(rows(db, 'SELECT id FROM rm_connected_accounts WHERE refreshable = 1 AND healthy = 1')).toEqual([]);
    fold(db, model, [log.event(EventTypes.connectedAccountCredentialsRotated, {
      connectedAccountId: 'apn_1', name: 'renamed', credentials: { $sealed: 'c3' }, refreshable: false,
    })]);
    expect(row(db)).toMatchObject({ healthy: 1, last_error: null, name: 'renamed', credentials: JSON.stringify({ $sealed: 'c3' }), expires_at: null, refreshable: 0 });
  });

  it('when deleted, then its row is gone', () => {
    const { db, model, log } = setup();
    fold(db, model, [log.event(EventTypes.connectedAccountDeleted, { connectedAccountId: 'apn_1', accountId: 'u_1' })]);
    expect(rows(db, 'SELECT * FROM rm_connected_accounts')).toEqual([]);
  });
});

describe('AppsReadModel', () => {
  it('given an app registered, then its row keeps the fields and the sealed OAuth client', () => {
    const db = databaseWith(AppsReadModel.definition);
    const log = new TestLog();
    const oauth = { authorizeUrl: 'https://p.example/auth', tokenUrl: 'https://p.example/token', clientId: 'cid', clientSecret: { $sealed: 's' }, scopes: ['a'] };
    fold(db, new AppsReadModel(db), [log.event(EventTypes.appRegistered, {
      accountId: 'u_1', nameSlug: 'myapp', name: 'My app', authType: 'oauth', fields: [], oauth,
    })]);
    expect(rows(db, 'SELECT * FROM rm_apps')).toEqual([{
      account_id: 'u_1', name_slug: 'myapp', name: 'My app', auth_type: 'oauth', fields: '[]', oauth: JSON.stringify(oauth),
      created_at: T0 / 1000 + 1, pos: 1,
    }]);
  });
});
