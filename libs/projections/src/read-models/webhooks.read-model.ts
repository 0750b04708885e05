import type Database from 'better-sqlite3';
import { EventTypes } from '@app/domain';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables, recordedSec } from './read-model';

type WebhookEvents =
  | typeof EventTypes.webhookCreated | typeof EventTypes.webhookUpdated | typeof EventTypes.webhookSecretRotated
  | typeof EventTypes.webhookDeleted;

/**
 * Webhooks with their sealed signing secrets. A rotation keeps the previous secret until
 * `prev_valid_until`, so receivers can roll over without missing a signature.
 */
export class WebhooksReadModel implements ReadModel<WebhookEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_webhooks'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_webhooks (
  id TEXT PRIMARY KEY, account_id TEXT, url TEXT, name TEXT, description TEXT, active INTEGER,
  secret TEXT, prev_secret TEXT, prev_valid_until INTEGER, created_at INTEGER, updated_at INTEGER, pos INTEGER);
CREATE INDEX IF NOT EXISTS rm_webhooks_account ON rm_webhooks(account_id, pos);`,
  };

  readonly handlers: ReadModelHandlers<WebhookEvents>;

  constructor(db: Database.Database) {
    const create = db.prepare(`INSERT OR REPLACE INTO rm_webhooks (id, account_id, url, name, description, active, secret, prev_secret,
        prev_valid_until, created_at, updated_at, pos) VALUES (?, ?, ?, ?, ?, 1, ?, NULL, NULL, ?, ?, ?)`);
    const update = db.prepare(`UPDATE rm_webhooks SET url = coalesce(?, url), name = coalesce(?, name), description = coalesce(?, description),
        active = coalesce(?, active), updated_at = ? WHERE id = ?`);
    // The row already holding the new secret has had this rotation (replayed, it must not copy the new secret into prev_secret).
    const rotate = db.prepare('UPDATE rm_webhooks SET prev_secret = secret, secret = ?, prev_valid_until = ?, updated_at = ? WHERE id = ? AND secret IS NOT ?');
    const remove = db.prepare('DELETE FROM rm_webhooks WHERE id = ?');
    this.handlers = {
      [EventTypes.webhookCreated]: (e) => {
        const d = e.data;
        const sec = recordedSec(e);
        create.run(d.webhookId, d.accountId, d.url, d.name, d.description, JSON.stringify(d.secret), sec, sec, logPosition(e));
      },
      [EventTypes.webhookUpdated]: (e) => {
        const d = e.data;
        update.run(d.url ?? null, d.name ?? null, d.description ?? null, d.active === undefined ? null : d.active ? 1 : 0, recordedSec(e), d.webhookId);
      },
      [EventTypes.webhookSecretRotated]: (e) => {
        const secret = JSON.stringify(e.data.secret);
        rotate.run(secret, e.data.previousValidUntil, recordedSec(e), e.data.webhookId, secret);
      },
      [EventTypes.webhookDeleted]: (e) => remove.run(e.data.webhookId),
    };
  }
}
