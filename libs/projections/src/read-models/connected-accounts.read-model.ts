import type Database from 'better-sqlite3';
import { EventTypes, TokenTimes } from '@app/domain';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables, recordedSec } from './read-model';

type ConnectedAccountEvents =
  | typeof EventTypes.connectedAccountCreated | typeof EventTypes.connectedAccountCredentialsRotated
  | typeof EventTypes.connectedAccountTokensRefreshed | typeof EventTypes.connectedAccountRefreshFailed
  | typeof EventTypes.connectedAccountDeleted;

/**
 * Connected accounts (`apn_...`) with their credentials sealed (`credentials`, the SealedSecret
 * as JSON) and, for OAuth accounts, when the token expires and when to refresh it. `healthy` is 0
 * after a refused refresh until new credentials arrive (a rotation or a successful refresh).
 */
export class ConnectedAccountsReadModel implements ReadModel<ConnectedAccountEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_connected_accounts'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_connected_accounts (
  id TEXT PRIMARY KEY, account_id TEXT, app TEXT, name TEXT, credentials TEXT, expires_at INTEGER, refresh_at INTEGER,
  refreshable INTEGER, healthy INTEGER, last_error TEXT, created_at INTEGER, updated_at INTEGER, pos INTEGER);
CREATE INDEX IF NOT EXISTS rm_connected_accounts_account ON rm_connected_accounts(account_id, app, pos);
CREATE INDEX IF NOT EXISTS rm_connected_accounts_refresh ON rm_connected_accounts(refresh_at) WHERE refreshable = 1 AND healthy = 1;`,
  };

  readonly handlers: ReadModelHandlers<ConnectedAccountEvents>;

  constructor(db: Database.Database) {
    const create = db.prepare(`INSERT OR REPLACE INTO rm_connected_accounts (id, account_id, app, name, credentials, expires_at, refresh_at,
        refreshable, healthy, last_error, created_at, updated_at, pos) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, NULL, ?, ?, ?)`);
    const renew = db.prepare(`UPDATE rm_connected_accounts SET name = coalesce(?, name), credentials = ?, expires_at = ?, refresh_at = ?,
        refreshable = ?, healthy = 1, last_error = NULL, updated_at = ? WHERE id = ?`);
    const fail = db.prepare('UPDATE rm_connected_accounts SET healthy = 0, last_error = ?, updated_at = ? WHERE id = ?');
    const remove = db.prepare('DELETE FROM rm_connected_accounts WHERE id = ?');
    const times = (t: TokenTimes) => [t.expiresAt ?? null, t.refreshAt ?? null, t.refreshable ? 1 : 0] as const;
    this.handlers = {
      [EventTypes.connectedAccountCreated]: (e) => {
        const d = e.data;
        const sec = recordedSec(e);
        create.run(d.connectedAccountId, d.accountId, d.app, d.name, JSON.stringify(d.credentials), ...times(d), sec, sec, logPosition(e));
      },
      [EventTypes.connectedAccountCredentialsRotated]: (e) => {
        const d = e.data;
        renew.run(d.name ?? null, JSON.stringify(d.credentials), ...times(d), recordedSec(e), d.connectedAccountId);
      },
      [EventTypes.connectedAccountTokensRefreshed]: (e) => {
        const d = e.data;
        renew.run(null, JSON.stringify(d.credentials), ...times(d), recordedSec(e), d.connectedAccountId);
      },
      [EventTypes.connectedAccountRefreshFailed]: (e) => fail.run(e.data.error, recordedSec(e), e.data.connectedAccountId),
      [EventTypes.connectedAccountDeleted]: (e) => remove.run(e.data.connectedAccountId),
    };
  }
}
