import type Database from 'better-sqlite3';
import type { SourceEventEmitted, SourceRunCompleted, WorkflowEventEmitted } from '@app/domain';
import { sharedJsonText, uuidv5like, uuidv8ordered } from '@app/event-store';

/**
 * One emitted event as every read model that routes emits sees it, whoever emitted it: a source's
 * `source.event_emitted.v1`, a workflow's `workflow.event_emitted.v1`, or a source run's logs on
 * its `$logs` channel. Subscriptions match on `emitterId` (or its account-wide glob) and `eventName`.
 */
export interface RoutedEmit {
  emitId: string;
  /** `dc_...` or `p_...`. */
  emitterId: string;
  accountId: string;
  /** The channel, `''` for the default one. */
  eventName: string;
  event: unknown;
  /** Listener hops that led to the emitting run (0: none). */
  hops: number;
  /** epoch ms of the emit. */
  ts: number;
  /** Its deliveries' and dispatches' ids sort with `emitId` ({@link SourceEventEmitted.deliveryIds}); absent: uuidv5, random. */
  orderedDeliveryIds?: boolean;
}

/**
 * The id of what one emit makes for one target (a delivery to a webhook, a dispatch to a
 * listener), in `namespace`: with `ordered` ({@link RoutedEmit.orderedDeliveryIds}) the emit id's
 * 48-bit timestamp then SHA-1 of `<emit id>/<target id>`, else uuidv5 of it.
 */
export function idOfEmitFor(namespace: string, emitId: string, targetId: string, ordered: boolean): string {
  const name = `${emitId}/${targetId}`;
  return ordered ? uuidv8ordered(emitId, namespace, name) : uuidv5like(namespace, name);
}

/** The `$logs` channel of sources: one event per run that logged something. */
export const LOGS_CHANNEL = '$logs';

/** Namespace of the emit ids of `$logs` events: uuidv5(run id), so a replay derives the same id. */
const LOGS_EMIT_NS = 'sluice.logs-emit';

export function fromSourceEmit(d: SourceEventEmitted, at: number): RoutedEmit {
  return {
    emitId: d.emitId, emitterId: d.sourceId, accountId: d.accountId, eventName: d.meta.name ?? '', event: d.event ?? null,
    hops: d.hops ?? 0, ts: d.meta.ts ?? at, orderedDeliveryIds: d.deliveryIds === 'ordered',
  };
}

export function fromWorkflowEmit(d: WorkflowEventEmitted, at: number): RoutedEmit {
  return {
    emitId: d.emitId, emitterId: d.workflowId, accountId: d.accountId, eventName: d.meta.name ?? '', event: d.event ?? null,
    hops: d.hops ?? 0, ts: d.meta.ts ?? at, orderedDeliveryIds: d.deliveryIds === 'ordered',
  };
}

/**
 * The `$logs` event of a run, or `undefined` when the run logged nothing. Its body is
 * `{run_id, trigger, ok, error?, logs: [{level, message, ts}]}` (documented in docs/api.md).
 */
export function logsEmitOf(d: SourceRunCompleted, accountId: string, at: number): RoutedEmit | undefined {
  if (d.logs.length === 0) return undefined;
  const body: Record<string, unknown> = { run_id: d.runId, trigger: d.trigger, ok: d.ok };
  if (d.error) body.error = { name: d.error.name, message: d.error.message };
  body.logs = d.logs.map((l) => ({ level: l.level, message: l.message, ts: l.ts }));
  return {
    emitId: uuidv5like(LOGS_EMIT_NS, d.runId), emitterId: d.sourceId, accountId, eventName: LOGS_CHANNEL, event: body,
    hops: d.hops ?? 0, ts: at,
  };
}

/**
 * The JSON text of an emitted event's payload (`null` for none). One emit is stored by several
 * read models in the same fold (a delivery per webhook, a dispatch per listener), each as this
 * text, and its record holds the same text (`emitRecordJson`): an object payload is serialised
 * once, by the first of them, and the others look it up ({@link sharedJsonText}). The payload is
 * the event's `data.event` (the appended object, or its lazily parsed text), which no read model
 * changes.
 */
export function payloadJson(payload: unknown): string {
  return sharedJsonText(payload);
}

/** The account-wide glob an emitter id matches (`dc_*` or `p_*`). */
export function emitterGlob(emitterId: string): string {
  return emitterId.startsWith('p_') ? 'p_*' : 'dc_*';
}

/** A subscription an emit reaches: its listener (`wh_`, `dc_` or `p_`). */
export interface Subscriber {
  id: string;
  listener_id: string;
}

/** How many times `rm_subscriptions` may have changed, per database: what subscriber caches are valid for. */
const subscriptionGenerations = new WeakMap<Database.Database, number>();

/**
 * Invalidates every {@link EmitSubscribers} cache of `db`. Called whenever `rm_subscriptions`
 * may have changed: a subscription folded or removed, the tables dropped, a transaction rolled
 * back (its rows are gone, answers cached inside it are wrong).
 */
export function subscriptionsChanged(db: Database.Database): void {
  subscriptionGenerations.set(db, (subscriptionGenerations.get(db) ?? 0) + 1);
}

/** Distinct (channel, emitter, account) answers kept at most; the cache starts over beyond. */
const MAX_CACHED = 10_000;

/**
 * The subscribers of an emit at this point of the log (from `rm_subscriptions`, kept by the
 * subscriptions read model earlier in the same transaction), each listener once. Answers are
 * cached until {@link subscriptionsChanged}: subscriptions change rarely, emits are most of the
 * log, and the query ran once per emit per routing read model.
 */
export class EmitSubscribers {
  private readonly query: Database.Statement;
  private readonly cache = new Map<string, readonly Subscriber[]>();
  private generation = -1;

  constructor(private readonly db: Database.Database) {
    this.query = db.prepare(
      'SELECT id, listener_id FROM rm_subscriptions WHERE event_name = ? AND (emitter_id = ? OR (emitter_id = ? AND account_id = ?)) ORDER BY pos');
  }

  /** The subscribers, oldest subscription first; the array is shared: do not modify it. */
  of(emit: RoutedEmit): readonly Subscriber[] {
    const generation = subscriptionGenerations.get(this.db) ?? 0;
    if (generation !== this.generation || this.cache.size >= MAX_CACHED) {
      this.cache.clear();
      this.generation = generation;
    }
    const key = `${emit.eventName}\u0000${emit.emitterId}\u0000${emit.accountId}`;
    let found = this.cache.get(key);
    if (!found) {
      const subs = this.query.all(emit.eventName, emit.emitterId, emitterGlob(emit.emitterId), emit.accountId) as Subscriber[];
      const seen = new Set<string>();
      found = subs.filter((s) => (seen.has(s.listener_id) ? false : (seen.add(s.listener_id), true)));
      this.cache.set(key, found);
    }
    return found;
  }
}
