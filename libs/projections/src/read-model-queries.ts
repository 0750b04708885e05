import type Database from 'better-sqlite3';
import { Page, PageRequest, pageQuery } from './page';
import { KEPT_PER_SOURCE } from './read-models.projection';
import { deliveryBodyOf } from './read-models/deliveries.read-model';
import type { ListenerDispatchRow } from './read-models/listener-dispatches.read-model';
import { SOURCE_EVENT_COLUMNS } from './read-models/source-events.read-model';
import { sourceLogDataOf } from './read-models/source-logs.read-model';

export interface WebhookRow {
  id: string; account_id: string; url: string; name: string; description: string; active: number;
  secret: string; prev_secret: string | null; prev_valid_until: number | null; created_at: number; updated_at: number; pos: number;
}
export interface SubscriptionRow {
  id: string; account_id: string; emitter_id: string; listener_id: string; event_name: string; created_at: number; pos: number;
}
export interface ComponentRow {
  id: string; account_id: string; key: string | null; name: string; version: string; type: string; description: string | null;
  code: string; code_hash: string; definition: string; bundle: string; created_at: number; updated_at: number; pos: number;
}
export interface SourceRow {
  id: string; account_id: string; component_id: string; name: string; name_slug: string; configured_props: string;
  active: number; endpoint_key: string | null; status: string; created_at: number; updated_at: number; pos: number;
  last_activated_at: number | null; last_timer_at: number | null;
  /** 1 when the last run failed; `last_error` is then its error (JSON: name, message, kind, at). */
  failing: number; last_error: string | null;
}
export interface SourceEventRow {
  source_id: string; summary_id: string; ms: number; seq: number; channel: string; emit_id: string; event: string; meta: string;
}
export interface DeliveryRow {
  id: string; webhook_id: string; account_id: string; emit_id: string; emitter_id: string; event_name: string;
  status: string; attempts: string; next_attempt_at: number | null; created_at: number; pos: number;
}
/** A kept run or hook entry; `data` read from its record in the log ({@link sourceLogDataOf}). */
export interface SourceLogRow { source_id: string; pos: number; kind: string; data: Record<string, unknown>; at: number }

/**
 * The delivery sender's queries over the schedule. `rm_deliveries_due` is a partial index (the
 * pending and failed rows only: a delivered row leaves it rather than moving within it), which
 * the planner uses only when a query's terms include the index's own `status IN (...)`, with
 * literals: each query below carries it, even where `status = '...'` already implies it.
 */
export const DELIVERY_SCHEDULE_SQL = {
  // Round-robin over webhooks: every webhook's earliest due rows come before any webhook's
  // later ones, so one webhook's backlog cannot fill the page.
  due: `SELECT * FROM (
        SELECT *, ROW_NUMBER() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, pos) AS lane_rank
        FROM rm_deliveries WHERE status IN ('pending','failed') AND next_attempt_at <= ?
      ) WHERE lane_rank <= ? ORDER BY lane_rank, next_attempt_at LIMIT ?`,
  nextDuePending: "SELECT next_attempt_at FROM rm_deliveries WHERE status = 'pending' AND status IN ('pending','failed') AND next_attempt_at > ? ORDER BY next_attempt_at LIMIT 1",
  nextDueFailed: "SELECT next_attempt_at FROM rm_deliveries WHERE status = 'failed' AND status IN ('pending','failed') AND next_attempt_at > ? ORDER BY next_attempt_at LIMIT 1",
} as const;

/** Kept summaries joined to their emits in the log (see {@link SOURCE_EVENT_COLUMNS}). */
const SOURCE_EVENTS_FROM = `${SOURCE_EVENT_COLUMNS} FROM rm_source_events s JOIN events e ON e.position = s.pos`;

/** Kept run and hook entries joined to their records in the log, by position. */
const SOURCE_LOGS_FROM = 'l.source_id, l.pos, l.kind, l.at, e.type, e.data FROM rm_source_logs l JOIN events e ON e.position = l.pos';
type LogEntryRow = Omit<SourceLogRow, 'data'> & { type: string; data: string };

function withLogData(rows: LogEntryRow[]): SourceLogRow[] {
  // Object.assign onto the rest object: `{ ...r, data }` would give every row listed a hidden class
  // of its own in V8 11 (a spread followed by a new member).
  return rows.map(({ type, data, ...r }) => Object.assign(r, { data: sourceLogDataOf(type, data) ?? {} }));
}

/** Read-only queries over the read models, used by the API and the processors. */
export class ReadModelQueries {
  private readonly s: Record<string, Database.Statement>;
  /** Prepared on first use: the log's table is the store's (a read model's test may have none). */
  private emitAt?: Database.Statement<[number], { type: string; data: string }>;

  constructor(private readonly db: Database.Database) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      accountByKey: p('SELECT account_id, key_id FROM rm_api_keys WHERE key_hash = ? AND revoked = 0'),
      keyHolder: p('SELECT account_id FROM rm_api_keys WHERE key_hash = ?'),
      account: p('SELECT * FROM rm_accounts WHERE id = ?'),
      accountCount: p('SELECT count(*) AS n FROM rm_accounts'),
      webhook: p('SELECT * FROM rm_webhooks WHERE id = ?'),
      sub: p('SELECT * FROM rm_subscriptions WHERE id = ?'),
      subTriple: p('SELECT * FROM rm_subscriptions WHERE account_id = ? AND emitter_id = ? AND listener_id = ? AND event_name = ?'),
      subsByListener: p('SELECT * FROM rm_subscriptions WHERE listener_id = ?'),
      subsByEmitter: p('SELECT * FROM rm_subscriptions WHERE emitter_id = ?'),
      comp: p('SELECT * FROM rm_components WHERE id = ?'),
      compByKey: p('SELECT * FROM rm_components WHERE account_id = ? AND key = ? ORDER BY pos DESC LIMIT 1'),
      source: p('SELECT * FROM rm_sources WHERE id = ?'),
      sourceBySlug: p('SELECT * FROM rm_sources WHERE account_id = ? AND name_slug = ?'),
      // Only what routing a request needs: it runs once per request, and the row's configured props can be large.
      sourceByEndpoint: p('SELECT id, account_id, component_id, status, active FROM rm_sources WHERE endpoint_key = ?'),
      sourcesActive: p("SELECT * FROM rm_sources WHERE status IN ('deploying','deployed','updating','deleting')"),
      delivery: p('SELECT * FROM rm_deliveries WHERE id = ?'),
      due: p(DELIVERY_SCHEDULE_SQL.due),
      nextDuePending: p(DELIVERY_SCHEDULE_SQL.nextDuePending),
      nextDueFailed: p(DELIVERY_SCHEDULE_SQL.nextDueFailed),
      pending: p('SELECT * FROM rm_pending_requests ORDER BY pos'),
    };
  }

  accountIdForKeyHash(hash: string): string | undefined {
    return (this.s.accountByKey.get(hash) as { account_id: string } | undefined)?.account_id;
  }
  /** The account a key (by hash) was ever issued to, revoked or not: keys are never reissued. */
  accountIssuedKeyHash(hash: string): string | undefined {
    return (this.s.keyHolder.get(hash) as { account_id: string } | undefined)?.account_id;
  }
  account(id: string): { id: string; name: string; created_at: number } | undefined {
    return this.s.account.get(id) as never;
  }
  accountCount(): number {
    return (this.s.accountCount.get() as { n: number }).n;
  }

  webhook(id: string): WebhookRow | undefined {
    return this.s.webhook.get(id) as WebhookRow | undefined;
  }
  webhooks(accountId: string, page: PageRequest): Page<WebhookRow> {
    return pageQuery<WebhookRow>(this.db, 'rm_webhooks', 'account_id = ?', [accountId], page);
  }

  subscription(id: string): SubscriptionRow | undefined {
    return this.s.sub.get(id) as SubscriptionRow | undefined;
  }
  subscriptionByTriple(accountId: string, emitterId: string, listenerId: string, eventName: string): SubscriptionRow | undefined {
    return this.s.subTriple.get(accountId, emitterId, listenerId, eventName) as SubscriptionRow | undefined;
  }
  subscriptions(accountId: string, page: PageRequest): Page<SubscriptionRow> {
    return pageQuery<SubscriptionRow>(this.db, 'rm_subscriptions', 'account_id = ?', [accountId], page);
  }
  subscriptionsByListener(listenerId: string): SubscriptionRow[] {
    return this.s.subsByListener.all(listenerId) as SubscriptionRow[];
  }
  subscriptionsByEmitter(emitterId: string): SubscriptionRow[] {
    return this.s.subsByEmitter.all(emitterId) as SubscriptionRow[];
  }

  autoSubscriptions(accountId: string): { id: string; listener_id: string; event_name: string; created_at: number }[] {
    return this.db.prepare('SELECT * FROM rm_auto_subscriptions WHERE account_id = ? ORDER BY pos').all(accountId) as never;
  }

  /** A published `key@version` of the account. */
  published(accountId: string, key: string, version: string): { component_id: string; code_hash: string } | undefined {
    return this.db.prepare('SELECT component_id, code_hash FROM rm_registry WHERE account_id = ? AND key = ? AND version = ?').get(accountId, key, version) as never;
  }
  /** Every published version of one key of the account, oldest published first. */
  publishedVersions(accountId: string, key: string): { version: string; component_id: string }[] {
    return this.db.prepare('SELECT version, component_id FROM rm_registry WHERE account_id = ? AND key = ? ORDER BY pos').all(accountId, key) as never;
  }
  /** Every published key of the account with its newest version's component (newest published last wins). */
  registry(accountId: string): { key: string; version: string; type: string; component_id: string }[] {
    return this.db.prepare(`SELECT r.key, r.version, r.type, r.component_id FROM rm_registry r
      WHERE r.account_id = ? AND r.pos = (SELECT max(pos) FROM rm_registry x WHERE x.account_id = r.account_id AND x.key = r.key)
      ORDER BY r.key`).all(accountId) as never;
  }

  component(id: string): ComponentRow | undefined {
    return this.s.comp.get(id) as ComponentRow | undefined;
  }
  componentByKey(accountId: string, key: string): ComponentRow | undefined {
    return this.s.compByKey.get(accountId, key) as ComponentRow | undefined;
  }

  source(id: string): SourceRow | undefined {
    return this.s.source.get(id) as SourceRow | undefined;
  }
  sourceBySlug(accountId: string, slug: string): SourceRow | undefined {
    return this.s.sourceBySlug.get(accountId, slug) as SourceRow | undefined;
  }
  /** The source at an endpoint key: the columns routing a request needs. */
  sourceByEndpoint(key: string): Pick<SourceRow, 'id' | 'account_id' | 'component_id' | 'status' | 'active'> | undefined {
    return this.s.sourceByEndpoint.get(key) as Pick<SourceRow, 'id' | 'account_id' | 'component_id' | 'status' | 'active'> | undefined;
  }
  sources(accountId: string, page: PageRequest): Page<SourceRow> {
    return pageQuery<SourceRow>(this.db, 'rm_sources', "account_id = ? AND status != 'deploying'", [accountId], page);
  }
  liveSources(): SourceRow[] {
    return this.s.sourcesActive.all() as SourceRow[];
  }

  /** The last events of a source, newest first, optionally on one channel. */
  sourceEvents(sourceId: string, limit: number, channel?: string): SourceEventRow[] {
    if (channel !== undefined) {
      return this.db
        .prepare(`SELECT ${SOURCE_EVENTS_FROM} WHERE s.source_id = ? AND s.channel = ? ORDER BY s.ms DESC, s.seq DESC LIMIT ?`)
        .all(sourceId, channel, limit) as SourceEventRow[];
    }
    return this.db
      .prepare(`SELECT ${SOURCE_EVENTS_FROM} WHERE s.source_id = ? ORDER BY s.ms DESC, s.seq DESC LIMIT ?`)
      .all(sourceId, limit) as SourceEventRow[];
  }
  /** Events after `(ms, seq)` (a summary id), oldest first: the backlog of a resumed SSE stream. */
  sourceEventsAfter(sourceId: string, ms: number, seq: number, limit: number, channel?: string): SourceEventRow[] {
    const where = 's.source_id = ? AND (s.ms > ? OR (s.ms = ? AND s.seq > ?))' + (channel !== undefined ? ' AND s.channel = ?' : '');
    return this.db
      .prepare(`SELECT ${SOURCE_EVENTS_FROM} WHERE ${where} ORDER BY s.ms, s.seq LIMIT ?`)
      .all(sourceId, ms, ms, seq, ...(channel !== undefined ? [channel] : []), limit) as SourceEventRow[];
  }

  /** Events kept for the API: at most KEPT_PER_SOURCE per channel (the table is trimmed lazily). */
  sourceEventCount(sourceId: string, channel?: string): number {
    const rows = (channel !== undefined
      ? this.db.prepare('SELECT count(*) AS n FROM rm_source_events WHERE source_id = ? AND channel = ?').all(sourceId, channel)
      : this.db.prepare('SELECT count(*) AS n FROM rm_source_events WHERE source_id = ? GROUP BY channel').all(sourceId)) as { n: number }[];
    return rows.reduce((t, r) => t + Math.min(r.n, KEPT_PER_SOURCE), 0);
  }
  /** Kept log entries of a source after position `pos`, oldest first (an SSE stream resuming). */
  sourceLogsAfter(sourceId: string, pos: number, limit: number): SourceLogRow[] {
    return withLogData(this.db.prepare(`SELECT ${SOURCE_LOGS_FROM} WHERE l.source_id = ? AND l.pos > ? ORDER BY l.pos LIMIT ?`)
      .all(sourceId, pos, limit) as LogEntryRow[]);
  }

  sourceLogs(sourceId: string, limit: number): SourceLogRow[] {
    return withLogData(this.db.prepare(`SELECT ${SOURCE_LOGS_FROM} WHERE l.source_id = ? ORDER BY l.pos DESC LIMIT ?`)
      .all(sourceId, limit) as LogEntryRow[]);
  }

  delivery(id: string): DeliveryRow | undefined {
    return this.s.delivery.get(id) as DeliveryRow | undefined;
  }
  deliveries(webhookId: string, page: PageRequest): Page<DeliveryRow> {
    return pageQuery<DeliveryRow>(this.db, 'rm_deliveries', 'webhook_id = ?', [webhookId], page);
  }
  /**
   * The body of a delivery whose emit is at log position `pos` (a row's `pos`), read from the
   * emit itself: `rm_deliveries` keeps no copy. `undefined` when that position holds no emit.
   */
  deliveryBody(pos: number): string | undefined {
    this.emitAt ??= this.db.prepare<[number], { type: string; data: string }>('SELECT type, data FROM events WHERE position = ?');
    const row = this.emitAt.get(pos);
    return row && deliveryBodyOf(row.type, row.data);
  }

  /** Deliveries due at `now`: at most `perWebhook` per webhook (its earliest), `limit` in all, fair between webhooks. */
  dueDeliveries(now: number, perWebhook: number, limit: number): DeliveryRow[] {
    return this.s.due.all(now, perWebhook, limit) as DeliveryRow[];
  }
  /** The earliest attempt time after `now` in the delivery schedule (pending or failed rows), if any. */
  nextDeliveryDueAfter(now: number): number | undefined {
    let next: number | undefined;
    // One index probe per status (rm_deliveries_due), rather than a scan that IN would cause.
    for (const stmt of [this.s.nextDuePending, this.s.nextDueFailed]) {
      const row = stmt.get(now) as { next_attempt_at: number } | undefined;
      if (row && (next === undefined || row.next_attempt_at < next)) next = row.next_attempt_at;
    }
    return next;
  }
  failedDeliveriesSince(webhookId: string, sinceMs: number): DeliveryRow[] {
    return this.db
      .prepare("SELECT * FROM rm_deliveries WHERE webhook_id = ? AND status IN ('failed','exhausted') AND created_at >= ? ORDER BY pos")
      .all(webhookId, sinceMs) as DeliveryRow[];
  }
  pendingRequests(): { request_id: string; source_id: string; pos: number }[] {
    return this.s.pending.all() as never;
  }

  /**
   * Emits not yet handed to their listening source or workflow, oldest first (at most `limit`),
   * passing over those of the listeners and accounts in `skip`. Oldest first is rowid order, the
   * order the fold inserted them in (see `ListenerDispatchesReadModel`).
   */
  pendingListenerDispatches(limit = -1, skip?: { listeners: readonly string[]; accounts: readonly string[] }): ListenerDispatchRow[] {
    if (!skip || (skip.listeners.length === 0 && skip.accounts.length === 0)) {
      return this.db.prepare('SELECT * FROM rm_listener_dispatches ORDER BY rowid LIMIT ?').all(limit) as ListenerDispatchRow[];
    }
    return this.db.prepare(`SELECT * FROM rm_listener_dispatches
      WHERE listener_id NOT IN (SELECT value FROM json_each(?)) AND account_id NOT IN (SELECT value FROM json_each(?))
      ORDER BY rowid LIMIT ?`).all(JSON.stringify(skip.listeners), JSON.stringify(skip.accounts), limit) as ListenerDispatchRow[];
  }

  /** The same for one listener (its index is `(listener_id, pos)`). */
  pendingListenerDispatchesOf(listenerId: string, limit = -1): ListenerDispatchRow[] {
    return this.db.prepare('SELECT * FROM rm_listener_dispatches WHERE listener_id = ? ORDER BY pos, dispatch_id LIMIT ?').all(listenerId, limit) as ListenerDispatchRow[];
  }

  /** How many of a listener's dispatches are pending (its `(listener_id, pos)` index). */
  pendingListenerDispatchCount(listenerId: string): number {
    return (this.db.prepare('SELECT count(*) AS n FROM rm_listener_dispatches WHERE listener_id = ?').get(listenerId) as { n: number }).n;
  }

  /** Whether a dispatch is still pending. */
  listenerDispatchPending(dispatchId: string): boolean {
    return this.db.prepare('SELECT 1 FROM rm_listener_dispatches WHERE dispatch_id = ?').get(dispatchId) !== undefined;
  }
}
