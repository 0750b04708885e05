import type Database from 'better-sqlite3';
import { writeStatements, type WriteStatement } from '@app/event-store';
import { EventTypes, type SourceRunCompleted } from '@app/domain';
import { EmitSubscribers, fromSourceEmit, fromWorkflowEmit, idOfEmitFor, logsEmitOf, payloadJson, RoutedEmit } from './emits';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables, recordedAt } from './read-model';

/** Namespace of delivery ids (derived from `<emit id>/<webhook id>`, see {@link deliveryIdFor}), so a delivery has one id however often it is derived. */
const DELIVERY_NS = 'sluice.delivery';

/**
 * The id of the delivery of one emit to one webhook: with `ordered` (the emit says so,
 * {@link SourceEventEmitted.deliveryIds}) it starts with the emit id's 48-bit timestamp, else
 * (older emits, workflows' emits, `$logs`) it is uuidv5 of both, random.
 */
export function deliveryIdFor(emitId: string, webhookId: string, ordered = false): string {
  return idOfEmitFor(DELIVERY_NS, emitId, webhookId, ordered);
}

/**
 * The body of the deliveries of the event at one position of the log, from its type and its
 * `data` text: the payload of a source's or a workflow's emit, or the `$logs` event of a source
 * run, serialised as the fold serialised it when it scheduled them ({@link payloadJson}).
 * `undefined` for an event that makes no deliveries.
 */
export function deliveryBodyOf(type: string, data: string): string | undefined {
  switch (type) {
    case EventTypes.sourceEventEmitted:
    case EventTypes.workflowEventEmitted:
      return JSON.stringify((JSON.parse(data) as { event?: unknown }).event ?? null);
    case EventTypes.sourceRunCompleted: {
      const logs = logsEmitOf(JSON.parse(data) as SourceRunCompleted, '', 0);
      return logs ? JSON.stringify(logs.event) : undefined;
    }
    default:
      return undefined;
  }
}

/** A delivery created by the projection, handed to the sender once its transaction commits. */
export interface NewDelivery {
  deliveryId: string;
  webhookId: string;
  emitId: string;
  emitterId: string;
  eventName: string;
  body: string;
}

type DeliveryEvents =
  | typeof EventTypes.sourceEventEmitted | typeof EventTypes.deliveryAttemptFailed | typeof EventTypes.deliverySucceeded
  | typeof EventTypes.deliveryExhausted | typeof EventTypes.deliveryRetryRequested | typeof EventTypes.webhookDeleted
  | typeof EventTypes.workflowEventEmitted | typeof EventTypes.sourceRunCompleted;

/**
 * The delivery schedule and its outcomes. The schedule is a projection: an emit (of a source, of
 * a workflow, or a source run's logs on `$logs`) creates one
 * pending delivery per webhook subscribed to its emitter and channel at that point of the log
 * (read from `rm_subscriptions`, which the subscriptions read model keeps in the same
 * transaction), so a rebuild derives the same deliveries. Outcomes are events of `delivery-<wh>`.
 */
export class DeliveriesReadModel implements ReadModel<DeliveryEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_deliveries'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_deliveries (
  id TEXT PRIMARY KEY, webhook_id TEXT, account_id TEXT, emit_id TEXT, emitter_id TEXT, event_name TEXT,
  status TEXT, attempts TEXT, next_attempt_at INTEGER, created_at INTEGER, pos INTEGER) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rm_deliveries_webhook ON rm_deliveries(webhook_id, pos);
CREATE INDEX IF NOT EXISTS rm_deliveries_due ON rm_deliveries(status, next_attempt_at) WHERE status IN ('pending','failed');`,
  };

  readonly handlers: ReadModelHandlers<DeliveryEvents>;
  private created: NewDelivery[] = [];
  private readonly subscribers: EmitSubscribers;
  private readonly accountOfSource: Database.Statement;
  private readonly schedule: WriteStatement;
  private readonly outcome: WriteStatement;

  /** `subscribers`: shared with the other read models that route emits (see {@link EmitSubscribers}). */
  constructor(db: Database.Database, subscribers: EmitSubscribers = new EmitSubscribers(db)) {
    this.subscribers = subscribers;
    this.accountOfSource = db.prepare('SELECT account_id FROM rm_sources WHERE id = ?');
    // No body: the emit at `pos` holds it (deliveryBodyOf), where a copy per delivery made each
    // byte of a webhook's payload be written twice more (see "A request's body is written many
    // times over" in docs/architecture.md).
    this.schedule = writeStatements(db).prepare(`INSERT OR IGNORE INTO rm_deliveries (id, webhook_id, account_id, emit_id, emitter_id, event_name, status, attempts,
        next_attempt_at, created_at, pos) VALUES (?, ?, ?, ?, ?, ?, 'pending', '[]', ?, ?, ?)`);
    // One statement per outcome: the attempt is appended to the row's JSON array in place, unless
    // an attempt with the same time is already there (an outcome folded twice is added once). The
    // first attempt (most outcomes) needs no JSON function: the array is empty, and the attempt is
    // JSON.stringify's own text. Positional parameters: binding a plain list costs less than
    // looking names up in an object.
    this.outcome = writeStatements(db).prepare(`UPDATE rm_deliveries SET status = ?, next_attempt_at = ?,
        attempts = CASE WHEN attempts = '[]' THEN '[' || ? || ']'
          WHEN EXISTS (SELECT 1 FROM json_each(attempts) WHERE json_extract(value, '$.at') = ?) THEN attempts
          ELSE json_insert(attempts, '$[#]', json(?)) END
      WHERE id = ?`);
    const retry = db.prepare("UPDATE rm_deliveries SET status = 'pending', next_attempt_at = ? WHERE id = ? AND status IN ('failed', 'exhausted')");
    const removeOfWebhook = db.prepare('DELETE FROM rm_deliveries WHERE webhook_id = ?');
    this.handlers = {
      [EventTypes.sourceEventEmitted]: (e) => this.scheduleDeliveries(fromSourceEmit(e.data, recordedAt(e)), recordedAt(e), logPosition(e)),
      [EventTypes.workflowEventEmitted]: (e) => this.scheduleDeliveries(fromWorkflowEmit(e.data, recordedAt(e)), recordedAt(e), logPosition(e)),
      [EventTypes.sourceRunCompleted]: (e) => {
        if (e.data.logs.length === 0) return; // nothing on $logs: skip the lookups
        const owner = this.accountOfSource.get(e.data.sourceId) as { account_id: string } | undefined;
        const logs = owner && logsEmitOf(e.data, owner.account_id, recordedAt(e));
        if (logs) this.scheduleDeliveries(logs, recordedAt(e), logPosition(e));
      },
      [EventTypes.deliveryAttemptFailed]: (e) => {
        const d = e.data;
        this.recordOutcome(d.deliveryId, 'failed',
          { at: recordedAt(e), status_code: d.statusCode ?? null, duration_ms: d.durationMs, error: d.error ?? null }, d.nextAttemptAt);
      },
      [EventTypes.deliverySucceeded]: (e) => {
        const d = e.data;
        this.recordOutcome(d.deliveryId, 'delivered', { at: recordedAt(e), status_code: d.statusCode, duration_ms: d.durationMs, error: null }, null);
      },
      [EventTypes.deliveryExhausted]: (e) => {
        const d = e.data;
        this.recordOutcome(d.deliveryId, 'exhausted',
          { at: recordedAt(e), status_code: d.statusCode ?? null, duration_ms: d.durationMs, error: d.error ?? null }, null);
      },
      [EventTypes.deliveryRetryRequested]: (e) => retry.run(recordedAt(e), e.data.deliveryId),
      [EventTypes.webhookDeleted]: (e) => removeOfWebhook.run(e.data.webhookId),
    };
  }

  /** Deliveries created since the last call (call after the transaction committed; empty after a rollback). */
  takeCreated(): NewDelivery[] {
    const out = this.created;
    this.created = [];
    return out;
  }

  /** Forgets the deliveries of a batch whose transaction rolled back. */
  discard(): void {
    this.created = [];
  }

  private scheduleDeliveries(emit: RoutedEmit, at: number, pos: number): void {
    const hooks = this.subscribers.of(emit).filter((s) => s.listener_id.startsWith('wh_'));
    if (hooks.length === 0) return;
    let body: string | undefined;
    for (const { listener_id: webhookId } of hooks) {
      const deliveryId = deliveryIdFor(emit.emitId, webhookId, emit.orderedDeliveryIds);
      const changes = this.schedule(deliveryId, webhookId, emit.accountId, emit.emitId, emit.emitterId, emit.eventName, at, at, pos);
      if (changes > 0) {
        body ??= payloadJson(emit.event);
        this.created.push({ deliveryId, webhookId, emitId: emit.emitId, emitterId: emit.emitterId, eventName: emit.eventName, body });
      }
    }
  }

  private recordOutcome(id: string, status: string, attempt: { at: number } & Record<string, unknown>, nextAt: number | null): void {
    const text = JSON.stringify(attempt);
    this.outcome(status, nextAt, text, attempt.at, text, id);
  }
}
