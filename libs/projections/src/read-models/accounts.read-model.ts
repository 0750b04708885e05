import type Database from 'better-sqlite3';
import { EventTypes } from '@app/domain';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables, recordedSec, Statement } from './read-model';

type AccountEvents = typeof EventTypes.accountCreated | typeof EventTypes.apiKeyIssued | typeof EventTypes.apiKeyRevoked;

/** Accounts and their API keys (by key hash: authentication looks a key up by its hash). */
export class AccountsReadModel implements ReadModel<AccountEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_accounts', 'rm_api_keys'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_accounts (id TEXT PRIMARY KEY, name TEXT, created_at INTEGER, pos INTEGER);
CREATE TABLE IF NOT EXISTS rm_api_keys (key_hash TEXT PRIMARY KEY, key_id TEXT, account_id TEXT, prefix TEXT, revoked INTEGER DEFAULT 0, created_at INTEGER);`,
  };

  readonly handlers: ReadModelHandlers<AccountEvents>;

  constructor(db: Database.Database) {
    const account: Statement = db.prepare('INSERT OR REPLACE INTO rm_accounts (id, name, created_at, pos) VALUES (?, ?, ?, ?)');
    const key = db.prepare('INSERT OR REPLACE INTO rm_api_keys (key_hash, key_id, account_id, prefix, revoked, created_at) VALUES (?, ?, ?, ?, 0, ?)');
    const revoke = db.prepare('UPDATE rm_api_keys SET revoked = 1 WHERE key_id = ?');
    this.handlers = {
      [EventTypes.accountCreated]: (e) => account.run(e.data.accountId, e.data.name, recordedSec(e), logPosition(e)),
      [EventTypes.apiKeyIssued]: (e) => key.run(e.data.keyHash, e.data.keyId, e.data.accountId, e.data.prefix, recordedSec(e)),
      [EventTypes.apiKeyRevoked]: (e) => revoke.run(e.data.keyId),
    };
  }
}
