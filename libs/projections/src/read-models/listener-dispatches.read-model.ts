import type Database from 'better-sqlite3';
import { writeStatements, type WriteStatement } from '@app/event-store';
import { EventTypes, MAX_LISTENER_HOPS } from '@app/domain';
import { EmitSubscribers, fromSourceEmit, fromWorkflowEmit, idOfEmitFor, logsEmitOf, payloadJson, RoutedEmit } from './emits';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables, recordedAt } from './read-model';

/** Namespace of dispatch ids (derived from `<emit id>/<listener id>`, see {@link dispatchIdFor}), so a dispatch has one id however often it is derived. */
const DISPATCH_NS = 'sluice.listener-dispatch';

/**
 * The id of the dispatch of one emit to one listener. For a source listener it is also the
 * `requestId` of the run it causes, so the source's own state refuses to run it twice. Named
 * like the emit's deliveries (`ordered`: {@link SourceEventEmitted.deliveryIds}): then it starts
 * with the emit id's 48-bit timestamp, and so do the ids of the listener's run and of its emits
 * (`runIdsFor`), which sort with it; else uuidv5 of emit and listener.
 */
export function dispatchIdFor(emitId: string, listenerId: string, ordered = false): string {
  return idOfEmitFor(DISPATCH_NS, emitId, listenerId, ordered);
}

/** An emit waiting to be handed to a listener (`dc_...` or `p_...`). */
export interface ListenerDispatch {
  dispatchId: string;
  listenerId: string;
  accountId: string;
  emitId: string;
  emitterId: string;
  eventName: string;
  /** The emitted event, JSON. */
  body: string;
  /** Hops of the emit; the listener's run carries one more. */
  hops: number;
  /** epoch ms of the emit. */
  ts: number;
}

export interface ListenerDispatchRow {
  dispatch_id: string; listener_id: string; account_id: string; emit_id: string; emitter_id: string; event_name: string;
  body: string; hops: number; ts: number; pos: number;
}

/** Turns a row back into the dispatch it holds. */
export function dispatchFromRow(r: ListenerDispatchRow): ListenerDispatch {
  return {
    dispatchId: r.dispatch_id, listenerId: r.listener_id, accountId: r.account_id, emitId: r.emit_id, emitterId: r.emitter_id,
    eventName: r.event_name, body: r.body, hops: r.hops, ts: r.ts,
  };
}

type ListenerDispatchEvents =
  | typeof EventTypes.sourceEventEmitted | typeof EventTypes.workflowEventEmitted | typeof EventTypes.sourceRunCompleted
  | typeof EventTypes.listenerDispatched | typeof EventTypes.sourceDeleted | typeof EventTypes.workflowRunStarted;

/**
 * Emits not yet handed to the sources and workflows that listen to them, like the delivery
 * schedule for webhooks: an emit (of a source, of a workflow, or a run's `$logs`) creates one
 * row per `dc_` / `p_` listener subscribed at that point of the log, unless it already carries
 * {@link MAX_LISTENER_HOPS} hops (a source listening to itself, or a cycle, ends there). A row
 * is settled by the listener source's `source.run_completed.v1` naming it as its request, by the
 * listener workflow's `workflow.run_started.v1` naming it (`dispatchId`), or by
 * `listener.dispatched.v1` (a run started before, or the dispatch skipped). Start-up hands every
 * row still here to its listener, so a crash between an emit and its dispatch loses nothing.
 *
 * The queue's order is its rowid's: rows are inserted in the order of the log (the fold's, a
 * rebuild's), and SQLite gives a new row the largest rowid plus one, so a row's rowid is larger
 * than that of every row inserted before it that is still there, whatever was settled meanwhile.
 * An index on `pos` kept that order before, and cost every commit that scheduled or settled a
 * dispatch one more page (issue 10, stop 60).
 */
export class ListenerDispatchesReadModel implements ReadModel<ListenerDispatchEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_listener_dispatches'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_listener_dispatches (
  dispatch_id TEXT PRIMARY KEY, listener_id TEXT, account_id TEXT, emit_id TEXT, emitter_id TEXT, event_name TEXT,
  body TEXT, hops INTEGER, ts INTEGER, pos INTEGER);
CREATE INDEX IF NOT EXISTS rm_listener_dispatches_listener ON rm_listener_dispatches(listener_id, pos);`,
  };

  readonly handlers: ReadModelHandlers<ListenerDispatchEvents>;
  private created: ListenerDispatch[] = [];
  private readonly subscribers: EmitSubscribers;
  private readonly insert: WriteStatement;

  /** `subscribers`: shared with the other read models that route emits (see {@link EmitSubscribers}). */
  constructor(db: Database.Database, subscribers: EmitSubscribers = new EmitSubscribers(db)) {
    this.subscribers = subscribers;
    this.insert = writeStatements(db).prepare(`INSERT OR IGNORE INTO rm_listener_dispatches
      (dispatch_id, listener_id, account_id, emit_id, emitter_id, event_name, body, hops, ts, pos) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    const settle = writeStatements(db).prepare('DELETE FROM rm_listener_dispatches WHERE dispatch_id = ?');
    const removeOfListener = db.prepare('DELETE FROM rm_listener_dispatches WHERE listener_id = ?');
    const accountOfSource = db.prepare('SELECT account_id FROM rm_sources WHERE id = ?');
    this.handlers = {
      [EventTypes.sourceEventEmitted]: (e) => this.schedule(fromSourceEmit(e.data, recordedAt(e)), logPosition(e)),
      [EventTypes.workflowEventEmitted]: (e) => this.schedule(fromWorkflowEmit(e.data, recordedAt(e)), logPosition(e)),
      [EventTypes.sourceRunCompleted]: (e) => {
        // Only a listener's run ('event') settles a dispatch: its requestId is the dispatch id.
        if (e.data.requestId && e.data.trigger === 'event') settle(e.data.requestId);
        if (e.data.logs.length === 0) return; // nothing on $logs: skip the lookups
        const owner = accountOfSource.get(e.data.sourceId) as { account_id: string } | undefined;
        const logs = owner && logsEmitOf(e.data, owner.account_id, recordedAt(e));
        if (logs) this.schedule(logs, logPosition(e));
      },
      [EventTypes.listenerDispatched]: (e) => settle(e.data.dispatchId),
      // A listening workflow's run names the dispatch it was started for (since stop 54).
      [EventTypes.workflowRunStarted]: (e) => {
        if (e.data.dispatchId !== undefined) settle(e.data.dispatchId);
      },
      // A deleted source hears nothing more; its pending dispatches go with it.
      [EventTypes.sourceDeleted]: (e) => removeOfListener.run(e.data.sourceId),
    };
  }

  /** Dispatches created since the last call (call after the transaction committed). */
  takeCreated(): ListenerDispatch[] {
    const out = this.created;
    this.created = [];
    return out;
  }

  /** Forgets the dispatches of a batch whose transaction rolled back. */
  discard(): void {
    this.created = [];
  }

  private schedule(emit: RoutedEmit, pos: number): void {
    if (emit.hops >= MAX_LISTENER_HOPS) return;
    const listeners = this.subscribers.of(emit).filter((s) => s.listener_id.startsWith('dc_') || s.listener_id.startsWith('p_'));
    if (listeners.length === 0) return;
    const body = payloadJson(emit.event);
    for (const { listener_id: listenerId } of listeners) {
      const dispatchId = dispatchIdFor(emit.emitId, listenerId, emit.orderedDeliveryIds);
      const changes = this.insert(dispatchId, listenerId, emit.accountId, emit.emitId, emit.emitterId, emit.eventName, body, emit.hops, emit.ts, pos);
      if (changes > 0) {
        this.created.push({
          dispatchId, listenerId, accountId: emit.accountId, emitId: emit.emitId, emitterId: emit.emitterId, eventName: emit.eventName,
          body, hops: emit.hops, ts: emit.ts,
        });
      }
    }
  }
}
