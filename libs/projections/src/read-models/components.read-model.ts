import type Database from 'better-sqlite3';
import { EventTypes } from '@app/domain';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables, recordedSec } from './read-model';

type ComponentEvents = typeof EventTypes.componentSaved | typeof EventTypes.componentPublished | typeof EventTypes.componentUnpublished;

/**
 * Saved components (code, bundle and definition) and the account's registry of published
 * `key@version`s. A published version is never replaced: the first publication stays.
 */
export class ComponentsReadModel implements ReadModel<ComponentEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_components', 'rm_registry'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_components (
  id TEXT PRIMARY KEY, account_id TEXT, key TEXT, name TEXT, version TEXT, type TEXT, description TEXT,
  code TEXT, code_hash TEXT, definition TEXT, bundle TEXT, created_at INTEGER, updated_at INTEGER, pos INTEGER);
CREATE INDEX IF NOT EXISTS rm_components_key ON rm_components(account_id, key);
CREATE TABLE IF NOT EXISTS rm_registry (account_id TEXT, key TEXT, version TEXT, type TEXT, component_id TEXT, code_hash TEXT, pos INTEGER, PRIMARY KEY (account_id, key, version));`,
  };

  readonly handlers: ReadModelHandlers<ComponentEvents>;

  constructor(db: Database.Database) {
    const save = db.prepare(`INSERT OR REPLACE INTO rm_components (id, account_id, key, name, version, type, description, code, code_hash, definition,
        bundle, created_at, updated_at, pos) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    const publish = db.prepare('INSERT OR IGNORE INTO rm_registry (account_id, key, version, type, component_id, code_hash, pos) VALUES (?, ?, ?, ?, ?, ?, ?)');
    const unpublish = db.prepare('DELETE FROM rm_registry WHERE account_id = ? AND key = ? AND version = ?');
    this.handlers = {
      [EventTypes.componentSaved]: (e) => {
        const d = e.data;
        const def = d.definition;
        const sec = recordedSec(e);
        save.run(d.componentId, d.accountId, def.key ?? null, def.name, def.version, def.type, def.description ?? null, d.code,
          d.codeHash, JSON.stringify(def), d.bundle, sec, sec, logPosition(e));
      },
      [EventTypes.componentPublished]: (e) => {
        const d = e.data;
        publish.run(d.accountId, d.key, d.version, d.type, d.componentId, d.codeHash, logPosition(e));
      },
      [EventTypes.componentUnpublished]: (e) => {
        unpublish.run(e.data.accountId, e.data.key, e.data.version);
      },
    };
  }
}
