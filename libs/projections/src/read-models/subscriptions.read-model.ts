import type Database from 'better-sqlite3';
import { EventTypes } from '@app/domain';
import { subscriptionsChanged } from './emits';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables, recordedSec } from './read-model';

type SubscriptionEvents =
  | typeof EventTypes.subscriptionCreated | typeof EventTypes.subscriptionDeleted | typeof EventTypes.autoSubscriptionCreated
  | typeof EventTypes.webhookDeleted;

/**
 * Subscriptions (emitter and channel to listener) and auto-subscriptions (a listener
 * subscribed to every source the account deploys later). A deleted webhook takes its
 * auto-subscriptions with it; its subscriptions are deleted by their own events.
 */
export class SubscriptionsReadModel implements ReadModel<SubscriptionEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_subscriptions', 'rm_auto_subscriptions'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_subscriptions (
  id TEXT PRIMARY KEY, account_id TEXT, emitter_id TEXT, listener_id TEXT, event_name TEXT, created_at INTEGER, pos INTEGER);
CREATE INDEX IF NOT EXISTS rm_subscriptions_emitter ON rm_subscriptions(emitter_id, event_name);
CREATE INDEX IF NOT EXISTS rm_subscriptions_listener ON rm_subscriptions(listener_id);
CREATE INDEX IF NOT EXISTS rm_subscriptions_account ON rm_subscriptions(account_id, pos);
CREATE TABLE IF NOT EXISTS rm_auto_subscriptions (id TEXT PRIMARY KEY, account_id TEXT, listener_id TEXT, event_name TEXT, created_at INTEGER, pos INTEGER);`,
  };

  readonly handlers: ReadModelHandlers<SubscriptionEvents>;

  constructor(db: Database.Database) {
    const create = db.prepare(`INSERT OR REPLACE INTO rm_subscriptions (id, account_id, emitter_id, listener_id, event_name, created_at, pos)
      VALUES (?, ?, ?, ?, ?, ?, ?)`);
    const remove = db.prepare('DELETE FROM rm_subscriptions WHERE id = ?');
    const createAuto = db.prepare('INSERT OR REPLACE INTO rm_auto_subscriptions (id, account_id, listener_id, event_name, created_at, pos) VALUES (?, ?, ?, ?, ?, ?)');
    const removeAutoOfListener = db.prepare('DELETE FROM rm_auto_subscriptions WHERE listener_id = ?');
    this.handlers = {
      [EventTypes.subscriptionCreated]: (e) => {
        const d = e.data;
        create.run(d.subscriptionId, d.accountId, d.emitterId, d.listenerId, d.eventName, recordedSec(e), logPosition(e));
        subscriptionsChanged(db);
      },
      [EventTypes.subscriptionDeleted]: (e) => {
        remove.run(e.data.subscriptionId);
        subscriptionsChanged(db);
      },
      [EventTypes.autoSubscriptionCreated]: (e) => {
        const d = e.data;
        createAuto.run(d.autoSubscriptionId, d.accountId, d.listenerId, d.eventName, recordedSec(e), logPosition(e));
      },
      [EventTypes.webhookDeleted]: (e) => removeAutoOfListener.run(e.data.webhookId),
    };
  }
}
