import type Database from 'better-sqlite3';
import type { StoredEvent } from '@app/event-store';
import { asSluiceEvent, EventType, EventTypes, StoredSluiceEvent } from '@app/domain';
import { READ_MODEL_SCHEMA, READ_MODEL_TABLES, READ_MODEL_VERSION } from './read-model-schema';
import { AccountsReadModel } from './read-models/accounts.read-model';
import { AppsReadModel } from './read-models/apps.read-model';
import { ConnectedAccountsReadModel } from './read-models/connected-accounts.read-model';
import { ComponentsReadModel } from './read-models/components.read-model';
import { DeliveriesReadModel, NewDelivery } from './read-models/deliveries.read-model';
import { ListenerDispatch, ListenerDispatchesReadModel } from './read-models/listener-dispatches.read-model';
import { PendingRequestsReadModel } from './read-models/pending-requests.read-model';
import type { HandledBy } from './read-models/read-model';
import { EmitSubscribers } from './read-models/emits';
import { EmittedSummary, SourceEventsReadModel } from './read-models/source-events.read-model';
import { LoggedEntry, SourceLogsReadModel } from './read-models/source-logs.read-model';
import { SourcesReadModel } from './read-models/sources.read-model';
import { SubscriptionsReadModel } from './read-models/subscriptions.read-model';
import { WebhooksReadModel } from './read-models/webhooks.read-model';
import { WorkflowRunsReadModel } from './read-models/workflow-runs.read-model';
import { WorkflowsReadModel } from './read-models/workflows.read-model';
import { WorkflowStepDbReadModel } from './read-models/workflow-step-db.read-model';

export { KEPT_PER_SOURCE } from './read-models/read-model';
export { deliveryIdFor } from './read-models/deliveries.read-model';
export type { NewDelivery } from './read-models/deliveries.read-model';
export { dispatchFromRow, dispatchIdFor } from './read-models/listener-dispatches.read-model';
export type { ListenerDispatch, ListenerDispatchRow } from './read-models/listener-dispatches.read-model';
export { LOGS_CHANNEL } from './read-models/emits';
export type { EmittedSummary } from './read-models/source-events.read-model';
export type { LoggedEntry } from './read-models/source-logs.read-model';

/** Every read model folded by {@link ReadModelsProjection}. */
type ComposedReadModel =
  | AccountsReadModel | WebhooksReadModel | SubscriptionsReadModel | ComponentsReadModel | SourcesReadModel | SourceEventsReadModel
  | SourceLogsReadModel | DeliveriesReadModel | PendingRequestsReadModel | ListenerDispatchesReadModel
  | WorkflowsReadModel | WorkflowRunsReadModel | WorkflowStepDbReadModel | AppsReadModel | ConnectedAccountsReadModel;

/** Event types no read model folds, on purpose (a source's db lives in its actor's state only). */
const NOT_PROJECTED = [EventTypes.sourceDbSet] as const;

/**
 * Fails to compile when an event type is neither folded by a read model nor listed in
 * {@link NOT_PROJECTED}: a new member of `SluiceEvent` must be considered here.
 */
type Unconsidered = Exclude<EventType, HandledBy<ComposedReadModel> | (typeof NOT_PROJECTED)[number]>;
const everyEventTypeIsConsidered: [Unconsidered] extends [never] ? true : { notProjectedNorListed: Unconsidered } = true;
void everyEventTypeIsConsidered;

type AnyHandler = (e: StoredSluiceEvent) => void;

/**
 * Folds the log into the SQLite read models, one module per read model
 * (`read-models/*.read-model.ts`), all in the caller's transaction. `apply` is synchronous and
 * meant to run inside that transaction together with the checkpoint update, so a crash never
 * leaves the read models ahead of or behind their checkpoint. Idempotent per event: replaying
 * an event already applied gives the same rows. An event is handed to the modules that fold
 * its type, in the order below; types this build does not know are skipped.
 */
export class ReadModelsProjection {
  readonly name = 'read-models';
  private readonly deliveries: DeliveriesReadModel;
  private readonly sourceLogs: SourceLogsReadModel;
  private readonly sourceEvents: SourceEventsReadModel;
  private readonly listenerDispatches: ListenerDispatchesReadModel;
  private readonly sources: SourcesReadModel;
  private readonly subscribers: EmitSubscribers;
  private readonly handlers = new Map<EventType, AnyHandler[]>();

  constructor(db: Database.Database) {
    db.exec('CREATE TABLE IF NOT EXISTS rm_meta (key TEXT PRIMARY KEY, value TEXT)');
    const version = (db.prepare("SELECT value FROM rm_meta WHERE key = 'version'").get() as { value: string } | undefined)?.value;
    if (version !== String(READ_MODEL_VERSION)) {
      // Another schema: start over; the runner replays the log from position 0.
      ReadModelsProjection.reset(db);
      db.prepare("INSERT OR REPLACE INTO rm_meta (key, value) VALUES ('version', ?)").run(String(READ_MODEL_VERSION));
    }
    db.exec(READ_MODEL_SCHEMA);
    this.subscribers = new EmitSubscribers(db);
    this.deliveries = new DeliveriesReadModel(db, this.subscribers);
    this.sourceLogs = new SourceLogsReadModel(db);
    this.sourceEvents = new SourceEventsReadModel(db);
    this.listenerDispatches = new ListenerDispatchesReadModel(db, this.subscribers);
    this.sources = new SourcesReadModel(db);
    const models: ComposedReadModel[] = [
      new AccountsReadModel(db), new WebhooksReadModel(db), new SubscriptionsReadModel(db), new ComponentsReadModel(db),
      this.sources, this.sourceEvents, this.sourceLogs, this.deliveries, new PendingRequestsReadModel(db),
      new WorkflowsReadModel(db), new WorkflowRunsReadModel(db), new WorkflowStepDbReadModel(db),
      this.listenerDispatches, new AppsReadModel(db), new ConnectedAccountsReadModel(db),
    ];
    for (const model of models) {
      // The one widening: each handler is registered under the type it was written for.
      for (const [type, handler] of Object.entries(model.handlers) as [EventType, AnyHandler][]) {
        const list = this.handlers.get(type) ?? [];
        list.push(handler);
        this.handlers.set(type, list);
      }
    }
  }

  /** Collect emits for live streams (off while rebuilding, when nobody listens). */
  get live(): boolean {
    return this.sourceEvents.live;
  }

  set live(on: boolean) {
    this.sourceEvents.live = on;
    this.sourceLogs.live = on;
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
    for (const stored of events) {
      const e = asSluiceEvent(stored);
      if (!e) continue;
      this.subscribers.forget();
      for (const handle of this.handlers.get(e.type) ?? []) handle(e);
    }
  }

  /** Deliveries created since the last call (call after the transaction committed; empty after a rollback). */
  takeCreatedDeliveries(): NewDelivery[] {
    return this.deliveries.takeCreated();
  }

  /** Forgets deliveries and emits of a batch whose transaction rolled back. */
  discardCreatedDeliveries(): void {
    this.deliveries.discard();
    this.sourceEvents.discard();
    this.sourceLogs.discard();
    this.listenerDispatches.discard();
    this.sources.discard();
  }

  /** Listener dispatches created since the last call (call after the transaction committed). */
  takeCreatedDispatches(): ListenerDispatch[] {
    return this.listenerDispatches.takeCreated();
  }

  /** Emitted events folded since the last call (call after the transaction committed). */
  takeEmitted(): EmittedSummary[] {
    return this.sourceEvents.takeEmitted();
  }

  /** Run and hook log entries folded since the last call (call after the transaction committed). */
  takeLogged(): LoggedEntry[] {
    return this.sourceLogs.takeLogged();
  }
}
