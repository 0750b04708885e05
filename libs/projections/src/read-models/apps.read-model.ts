import type Database from 'better-sqlite3';
import { EventTypes } from '@app/domain';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables, recordedSec } from './read-model';

type AppEvents = typeof EventTypes.appRegistered;

/**
 * Operators' own apps (`POST /v1/apps`), one row per owning account and slug. The OAuth client
 * secret stays sealed in `oauth` (JSON); the catalog shipped with the server is not stored.
 */
export class AppsReadModel implements ReadModel<AppEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_apps'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_apps (
  account_id TEXT, name_slug TEXT, name TEXT, auth_type TEXT, fields TEXT, oauth TEXT, created_at INTEGER, pos INTEGER,
  PRIMARY KEY (account_id, name_slug));`,
  };

  readonly handlers: ReadModelHandlers<AppEvents>;

  constructor(db: Database.Database) {
    const insert = db.prepare(`INSERT OR REPLACE INTO rm_apps (account_id, name_slug, name, auth_type, fields, oauth, created_at, pos)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
    this.handlers = {
      [EventTypes.appRegistered]: (e) => {
        const d = e.data;
        insert.run(d.accountId, d.nameSlug, d.name, d.authType, JSON.stringify(d.fields), d.oauth ? JSON.stringify(d.oauth) : null, recordedSec(e), logPosition(e));
      },
    };
  }
}
