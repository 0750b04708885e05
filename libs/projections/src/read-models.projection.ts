import type Database from 'better-sqlite3';
import type { StoredEvent } from '@app/event-store';
import { EventTypes } from '@app/domain';
import { uuidv5like } from '@app/event-store';
import { READ_MODEL_SCHEMA, READ_MODEL_TABLES, READ_MODEL_VERSION } from './read-model-schema';

/** Namespace of delivery ids: uuidv5(emit id / webhook id), so a delivery has one id however often it is derived. */
const DELIVERY_NS = 'sluice.delivery';

/** A delivery created by the projection, handed to the sender once its transaction commits. */
export interface NewDelivery {
  deliveryId: string;
  webhookId: string;
  emitId: string;
  emitterId: string;
  eventName: string;
  body: string;
}

/** An emitted event as it entered the read model, for live streams (SSE). */
export interface EmittedSummary {
  sourceId: string;
  summaryId: string;
  ms: number;
  channel: string;
  emitId: string;
  event: unknown;
  meta: Record<string, unknown>;
}

/** The id of the delivery of one emit to one webhook. */
export function deliveryIdFor(emitId: string, webhookId: string): string {
  return uuidv5like(DELIVERY_NS, `${emitId}/${webhookId}`);
}

/** How many emitted events and log entries are kept per source (and per channel) for the API. */
export const KEPT_PER_SOURCE = 100;

type Stmt = Database.Statement;

/** Kept-last-N tables are trimmed every this many inserts; queries apply the limit themselves. */
const TRIM_EVERY = 20;

/**
 * Folds the log into the SQLite read models. `apply` is synchronous and meant to run inside the
 * caller's transaction together with the checkpoint update, so a crash never leaves the read
 * models ahead of or behind their checkpoint. Idempotent per event: replaying an event already
 * applied gives the same rows.
 */
export class ReadModelsProjection {
  readonly name = 'read-models';
  /** Collect emits for live streams (off while rebuilding, when nobody listens). */
  live = false;
  private readonly s: Record<string, Stmt>;
  private created: NewDelivery[] = [];
  private emitted: EmittedSummary[] = [];

  constructor(private readonly db: Database.Database) {
    db.exec('CREATE TABLE IF NOT EXISTS rm_meta (key TEXT PRIMARY KEY, value TEXT)');
    const version = (db.prepare("SELECT value FROM rm_meta WHERE key = 'version'").get() as { value: string } | undefined)?.value;
    if (version !== String(READ_MODEL_VERSION)) {
      // Another schema: start over; the runner replays the log from position 0.
      ReadModelsProjection.reset(db);
      db.prepare("INSERT OR REPLACE INTO rm_meta (key, value) VALUES ('version', ?)").run(String(READ_MODEL_VERSION));
    }
    db.exec(READ_MODEL_SCHEMA);
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      account: p('INSERT OR REPLACE INTO rm_accounts (id, name, created_at, pos) VALUES (?, ?, ?, ?)'),
      key: p('INSERT OR REPLACE INTO rm_api_keys (key_hash, key_id, account_id, prefix, revoked, created_at) VALUES (?, ?, ?, ?, 0, ?)'),
      keyRevoke: p('UPDATE rm_api_keys SET revoked = 1 WHERE key_id = ?'),
      whCreate: p(`INSERT OR REPLACE INTO rm_webhooks (id, account_id, url, name, description, active, secret, prev_secret,
        prev_valid_until, created_at, updated_at, pos) VALUES (?, ?, ?, ?, ?, 1, ?, NULL, NULL, ?, ?, ?)`),
      whUpdate: p(`UPDATE rm_webhooks SET url = coalesce(?, url), name = coalesce(?, name), description = coalesce(?, description),
        active = coalesce(?, active), updated_at = ? WHERE id = ?`),
      whRotate: p('UPDATE rm_webhooks SET prev_secret = secret, secret = ?, prev_valid_until = ?, updated_at = ? WHERE id = ?'),
      whDelete: p('DELETE FROM rm_webhooks WHERE id = ?'),
      subCreate: p('INSERT OR REPLACE INTO rm_subscriptions (id, account_id, emitter_id, listener_id, event_name, created_at, pos) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      subDelete: p('DELETE FROM rm_subscriptions WHERE id = ?'),
      autoSub: p('INSERT OR REPLACE INTO rm_auto_subscriptions (id, account_id, listener_id, event_name, created_at, pos) VALUES (?, ?, ?, ?, ?, ?)'),
      publish: p('INSERT OR IGNORE INTO rm_registry (account_id, key, version, type, component_id, code_hash, pos) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      autoSubDeleteListener: p('DELETE FROM rm_auto_subscriptions WHERE listener_id = ?'),
      comp: p(`INSERT OR REPLACE INTO rm_components (id, account_id, key, name, version, type, description, code, code_hash, definition,
        bundle, created_at, updated_at, pos) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      srcCreate: p(`INSERT OR REPLACE INTO rm_sources (id, account_id, component_id, name, name_slug, configured_props, active,
        endpoint_key, status, created_at, updated_at, pos) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'deploying', ?, ?, ?)`),
      srcStatus: p('UPDATE rm_sources SET status = ?, updated_at = ? WHERE id = ?'),
      srcActivated: p('UPDATE rm_sources SET last_activated_at = ? WHERE id = ?'),
      srcTimerFired: p('UPDATE rm_sources SET last_timer_at = ? WHERE id = ?'),
      srcRunOutcome: p('UPDATE rm_sources SET failing = ?, last_error = ? WHERE id = ?'),
      srcUpdate: p(`UPDATE rm_sources SET component_id = ?, name = ?, name_slug = ?, configured_props = ?, active = ?, endpoint_key = ?,
        status = 'deployed', updated_at = ? WHERE id = ?`),
      srcDelete: p('DELETE FROM rm_sources WHERE id = ?'),
      evInsert: p('INSERT OR REPLACE INTO rm_source_events (source_id, summary_id, ms, seq, channel, emit_id, event, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
      evTrim: p(`DELETE FROM rm_source_events WHERE source_id = ? AND channel = ? AND (ms, seq) NOT IN (
        SELECT ms, seq FROM rm_source_events WHERE source_id = ? AND channel = ? ORDER BY ms DESC, seq DESC LIMIT ${KEPT_PER_SOURCE})`),
      evClearAll: p('DELETE FROM rm_source_events WHERE source_id = ?'),
      evDeleteAll: p('DELETE FROM rm_source_events WHERE source_id = ?'),
      logInsert: p('INSERT OR REPLACE INTO rm_source_logs (source_id, pos, kind, data, at) VALUES (?, ?, ?, ?, ?)'),
      logTrim: p(`DELETE FROM rm_source_logs WHERE source_id = ? AND pos <= (
        SELECT pos FROM rm_source_logs WHERE source_id = ? ORDER BY pos DESC LIMIT 1 OFFSET ${KEPT_PER_SOURCE})`),
      logDeleteAll: p('DELETE FROM rm_source_logs WHERE source_id = ?'),
      subsMatching: p(`SELECT id, listener_id FROM rm_subscriptions WHERE event_name = ? AND (emitter_id = ? OR (emitter_id = ? AND account_id = ?))`),
      dlSchedule: p(`INSERT OR IGNORE INTO rm_deliveries (id, webhook_id, account_id, emit_id, emitter_id, event_name, body, status, attempts,
        next_attempt_at, created_at, pos) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', '[]', ?, ?, ?)`),
      dlAttempts: p('SELECT attempts FROM rm_deliveries WHERE id = ?'),
      dlOutcome: p('UPDATE rm_deliveries SET status = ?, attempts = ?, next_attempt_at = ? WHERE id = ?'),
      dlRetry: p("UPDATE rm_deliveries SET status = 'pending', next_attempt_at = ? WHERE id = ? AND status IN ('failed', 'exhausted')"),
      dlDeleteWebhook: p('DELETE FROM rm_deliveries WHERE webhook_id = ?'),
      reqInsert: p('INSERT OR IGNORE INTO rm_pending_requests (request_id, source_id, pos) VALUES (?, ?, ?)'),
      reqDelete: p('DELETE FROM rm_pending_requests WHERE request_id = ?'),
      reqDeleteSource: p('DELETE FROM rm_pending_requests WHERE source_id = ?'),
    };
  }

  /**
   * Drops every read-model table and their checkpoint (a rebuild then replays the log). Other
   * processors keep their checkpoints: their side effects already happened.
   */
  static reset(db: Database.Database): void {
    db.transaction(() => {
      for (const t of READ_MODEL_TABLES) db.exec(`DROP TABLE IF EXISTS ${t}`);
      db.exec('CREATE TABLE IF NOT EXISTS checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL)');
      db.prepare('DELETE FROM checkpoints WHERE name = ?').run('read-models');
    })();
  }

  /** Applies a batch in log order. Call inside a transaction. */
  apply(events: StoredEvent[]): void {
    for (const e of events) this.applyOne(e);
  }

  /** Deliveries created since the last call (call after the transaction committed; empty after a rollback). */
  takeCreatedDeliveries(): NewDelivery[] {
    const out = this.created;
    this.created = [];
    return out;
  }

  /** Forgets deliveries and emits of a batch whose transaction rolled back. */
  discardCreatedDeliveries(): void {
    this.created = [];
    this.emitted = [];
  }

  /** Emitted events folded since the last call (call after the transaction committed). */
  takeEmitted(): EmittedSummary[] {
    const out = this.emitted;
    this.emitted = [];
    return out;
  }

  /**
   * The delivery schedule is a projection: an emit creates one pending delivery per webhook
   * subscribed to its emitter and channel at that point of the log, so a rebuild derives the
   * same deliveries. Outcomes are events of `delivery-<wh>`.
   */
  private scheduleDeliveries(d: { sourceId: string; accountId: string; emitId: string; event: unknown; meta: { name?: string } }, at: number, pos: number): void {
    const channel = d.meta.name ?? '';
    const subs = this.s.subsMatching.all(channel, d.sourceId, 'dc_*', d.accountId) as { id: string; listener_id: string }[];
    if (subs.length === 0) return;
    const body = JSON.stringify(d.event ?? null);
    const seen = new Set<string>();
    for (const sub of subs) {
      if (!sub.listener_id.startsWith('wh_') || seen.has(sub.listener_id)) continue;
      seen.add(sub.listener_id);
      const deliveryId = deliveryIdFor(d.emitId, sub.listener_id);
      const r = this.s.dlSchedule.run(deliveryId, sub.listener_id, d.accountId, d.emitId, d.sourceId, channel, body, at, at, pos);
      if (r.changes > 0) {
        this.created.push({ deliveryId, webhookId: sub.listener_id, emitId: d.emitId, emitterId: d.sourceId, eventName: channel, body });
      }
    }
  }

  private applyOne(e: StoredEvent): void {
    const s = this.s;
    const d = e.data;
    const at = e.metadata.at;
    const sec = Math.floor(at / 1000);
    const pos = Number(e.position);
    switch (e.type) {
      case EventTypes.accountCreated:
        s.account.run(d.accountId, d.name, sec, pos);
        break;
      case EventTypes.apiKeyIssued:
        s.key.run(d.keyHash, d.keyId, d.accountId, d.prefix, sec);
        break;
      case EventTypes.apiKeyRevoked:
        s.keyRevoke.run(d.keyId);
        break;
      case EventTypes.webhookCreated:
        s.whCreate.run(d.webhookId, d.accountId, d.url, d.name, d.description, JSON.stringify(d.secret), sec, sec, pos);
        break;
      case EventTypes.webhookUpdated:
        s.whUpdate.run(d.url ?? null, d.name ?? null, d.description ?? null, d.active === undefined ? null : d.active ? 1 : 0, sec, d.webhookId);
        break;
      case EventTypes.webhookSecretRotated:
        s.whRotate.run(JSON.stringify(d.secret), d.previousValidUntil, sec, d.webhookId);
        break;
      case EventTypes.webhookDeleted:
        s.whDelete.run(d.webhookId);
        s.autoSubDeleteListener.run(d.webhookId);
        s.dlDeleteWebhook.run(d.webhookId);
        break;
      case EventTypes.subscriptionCreated:
        s.subCreate.run(d.subscriptionId, d.accountId, d.emitterId, d.listenerId, d.eventName, sec, pos);
        break;
      case EventTypes.subscriptionDeleted:
        s.subDelete.run(d.subscriptionId);
        break;
      case EventTypes.componentPublished:
        s.publish.run(d.accountId, d.key, d.version, d.type, d.componentId, d.codeHash, pos);
        break;
      case EventTypes.autoSubscriptionCreated:
        s.autoSub.run(d.autoSubscriptionId, d.accountId, d.listenerId, d.eventName, sec, pos);
        break;
      case EventTypes.componentSaved: {
        const def = d.definition;
        s.comp.run(d.componentId, d.accountId, def.key ?? null, def.name, def.version, def.type, def.description ?? null, d.code,
          d.codeHash, JSON.stringify(def), d.bundle, sec, sec, pos);
        break;
      }
      case EventTypes.sourceDeployRequested:
        s.srcCreate.run(d.sourceId, d.accountId, d.componentId, d.name, d.nameSlug, JSON.stringify(d.configuredProps),
          d.active ? 1 : 0, d.endpointKey ?? null, sec, sec, pos);
        break;
      case EventTypes.sourceDeployed:
        s.srcStatus.run('deployed', sec, d.sourceId);
        s.srcActivated.run(at, d.sourceId);
        break;
      case EventTypes.sourceDeployFailed:
        // A failed deploy leaves nothing deployed: the row goes, the audit trail stays in the log.
        s.srcDelete.run(d.sourceId);
        break;
      case EventTypes.sourceUpdateRequested:
        s.srcStatus.run('updating', sec, d.sourceId);
        break;
      case EventTypes.sourceUpdated:
        s.srcUpdate.run(d.componentId, d.name, d.nameSlug, JSON.stringify(d.configuredProps), d.active ? 1 : 0, d.endpointKey ?? null,
          sec, d.sourceId);
        s.srcActivated.run(at, d.sourceId);
        break;
      case EventTypes.sourceUpdateFailed:
      case EventTypes.sourceDeleteFailed:
        s.srcStatus.run('deployed', sec, d.sourceId);
        break;
      case EventTypes.sourceDeleteRequested:
        s.srcStatus.run('deleting', sec, d.sourceId);
        break;
      case EventTypes.sourceDeleted:
        s.srcDelete.run(d.sourceId);
        s.evDeleteAll.run(d.sourceId);
        s.logDeleteAll.run(d.sourceId);
        s.reqDeleteSource.run(d.sourceId);
        break;
      case EventTypes.sourceEventEmitted: {
        const [ms, seq] = String(d.summaryId).split('-').map(Number);
        const channel = d.meta.name ?? '';
        s.evInsert.run(d.sourceId, d.summaryId, ms, seq, channel, d.emitId, JSON.stringify(d.event ?? null), JSON.stringify(d.meta));
        this.scheduleDeliveries(d, at, pos);
        if (this.live) this.emitted.push({ sourceId: d.sourceId, summaryId: d.summaryId, ms, channel, emitId: d.emitId, event: d.event ?? null, meta: d.meta });
        // Trimmed every TRIM_EVERY emits (queries cap at KEPT_PER_SOURCE), not on every insert.
        if (seq % TRIM_EVERY === 0) s.evTrim.run(d.sourceId, channel, d.sourceId, channel);
        break;
      }
      case EventTypes.sourceEventsCleared:
        this.clearEvents(d.sourceId, d.startId, d.endId);
        break;
      case EventTypes.sourceRunCompleted:
        if (d.requestId) s.reqDelete.run(d.requestId);
        if (d.trigger === 'timer') s.srcTimerFired.run(at, d.sourceId);
        // The last run's outcome: a failed run (a crash included) marks the source failing, a good one clears it.
        s.srcRunOutcome.run(d.ok ? 0 : 1, d.ok ? null : JSON.stringify({ ...d.error, at }), d.sourceId);
        this.addLog(d.sourceId, pos, 'run', { trigger: d.trigger, ok: d.ok, error: d.error, logs: d.logs, emitted: d.emitted, duration_ms: d.durationMs }, at);
        break;
      case EventTypes.sourceHookRan:
        this.addLog(d.sourceId, pos, `hook:${d.hook}`, { ok: d.ok, error: d.error, logs: d.logs, duration_ms: d.durationMs }, at);
        break;
      case EventTypes.httpRequestReceived:
        s.reqInsert.run(d.requestId, d.sourceId, pos);
        break;
      case EventTypes.deliveryAttemptFailed:
        this.deliveryOutcome(d.deliveryId, 'failed', { at, status_code: d.statusCode ?? null, duration_ms: d.durationMs, error: d.error ?? null }, d.nextAttemptAt);
        break;
      case EventTypes.deliverySucceeded:
        this.deliveryOutcome(d.deliveryId, 'delivered', { at, status_code: d.statusCode, duration_ms: d.durationMs, error: null }, null);
        break;
      case EventTypes.deliveryExhausted:
        this.deliveryOutcome(d.deliveryId, 'exhausted', { at, status_code: d.statusCode ?? null, duration_ms: d.durationMs, error: d.error ?? null }, null);
        break;
      case EventTypes.deliveryRetryRequested:
        s.dlRetry.run(at, d.deliveryId);
        break;
      default:
        break;
    }
  }

  private addLog(sourceId: string, pos: number, kind: string, data: unknown, at: number): void {
    this.s.logInsert.run(sourceId, pos, kind, JSON.stringify(data), at);
    if (pos % TRIM_EVERY === 0) this.s.logTrim.run(sourceId, sourceId);
  }

  private deliveryOutcome(id: string, status: string, attempt: Record<string, unknown>, nextAt: number | null): void {
    const row = this.s.dlAttempts.get(id) as { attempts: string } | undefined;
    if (!row) return;
    const attempts = JSON.parse(row.attempts) as Record<string, unknown>[];
    // Idempotent: an outcome already folded (same time and attempt count) is not added twice.
    if (!attempts.some((a) => a.at === attempt.at)) attempts.push(attempt);
    this.s.dlOutcome.run(status, JSON.stringify(attempts), nextAt, id);
  }

  private clearEvents(sourceId: string, startId?: string, endId?: string): void {
    if (!startId && !endId) {
      this.s.evClearAll.run(sourceId);
      return;
    }
    const key = (id: string) => id.split('-').map(Number) as [number, number];
    const [sm, ss] = startId ? key(startId) : [0, 0];
    const [em, es] = endId ? key(endId) : [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER];
    this.db
      .prepare('DELETE FROM rm_source_events WHERE source_id = ? AND (ms > ? OR (ms = ? AND seq >= ?)) AND (ms < ? OR (ms = ? AND seq <= ?))')
      .run(sourceId, sm, sm, ss, em, em, es);
  }
}
