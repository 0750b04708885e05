import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import type { LogEvent } from '@app/event-store';
import { EventType, EventTypes, LogSluiceEvent } from '@app/domain';
import { READ_MODEL_DEFERRED_INDEXES, READ_MODEL_LOAD_SCHEMA, READ_MODEL_SCHEMA, READ_MODEL_TABLES, READ_MODEL_VERSION } from './read-model-schema';
import { AccountsReadModel } from './read-models/accounts.read-model';
import { AppsReadModel } from './read-models/apps.read-model';
import { ConnectedAccountsReadModel } from './read-models/connected-accounts.read-model';
import { ComponentsReadModel } from './read-models/components.read-model';
import { DeliveriesReadModel, NewDelivery } from './read-models/deliveries.read-model';
import { ListenerDispatch, ListenerDispatchesReadModel } from './read-models/listener-dispatches.read-model';
import { PendingRequestsReadModel } from './read-models/pending-requests.read-model';
import type { HandledBy } from './read-models/read-model';
import { EmitSubscribers, subscriptionsChanged } from './read-models/emits';
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

type AnyHandler = (e: LogSluiceEvent) => void;

/** Events per transaction of a rebuild: few commits, each writing the pages it touched once. */
export const REBUILD_BATCH = 200_000;

/**
 * Events read from the log at a time within a rebuild's transaction: small enough that a page's
 * parsed events die young (cheap scavenges instead of promoting whole batches to the old heap).
 */
const REBUILD_PAGE = 1_000;

/**
 * Page cache of a rebuild (KiB, SQLite's negative `cache_size`): enough for the read models' hot
 * B-tree pages; a page that falls out is read back from the OS's page cache. A bigger cache is
 * slower: every page of it is fresh memory the kernel zeroes and maps (1 GiB took 11.3-11.5 s
 * for 1 million events where 64 MiB takes 9.6-10.0 s; 2 MiB spills to the WAL and takes 11.5 s).
 */
const REBUILD_CACHE_KIB = 64 * 1024;

/** `rm_meta` version written while a rebuild runs: any other value than the schema's version makes the next open start over. */
const REBUILDING = 'rebuilding';

/**
 * WAL size beyond which a rebuild checkpoints between transactions (with syncs, as the
 * connection normally does): the WAL would otherwise grow by the pages every transaction touched.
 */
export const REBUILD_WAL_LIMIT_BYTES = 1024 * 1024 * 1024;

/** Reads the log synchronously (called inside the rebuild's transactions): events strictly after `after`, at most `maxCount`, in position order. */
export type LogReader = (after: bigint, maxCount: number) => LogEvent[];

/** Sizes of a rebuild; the defaults are what `admin rebuild` uses. */
export interface RebuildOptions {
  /** Events per transaction ({@link REBUILD_BATCH}). */
  batch?: number;
  /** WAL size that triggers a synced checkpoint between transactions ({@link REBUILD_WAL_LIMIT_BYTES}). */
  walLimitBytes?: number;
}

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
  private readonly pendingRequests: PendingRequestsReadModel;
  private readonly workflowRuns: WorkflowRunsReadModel;
  private readonly subscribers: EmitSubscribers;
  private readonly handlers = new Map<EventType, AnyHandler[]>();
  /**
   * True when opening found read models of another version (or a rebuild cut short) and dropped
   * them: the whole log is to be replayed, which {@link rebuild} does faster than the runner.
   */
  readonly startedOver: boolean = false;

  constructor(private readonly db: Database.Database) {
    db.exec('CREATE TABLE IF NOT EXISTS rm_meta (key TEXT PRIMARY KEY, value TEXT)');
    const version = (db.prepare("SELECT value FROM rm_meta WHERE key = 'version'").get() as { value: string } | undefined)?.value;
    if (version !== String(READ_MODEL_VERSION)) {
      // Another schema, or a rebuild cut short: start over from position 0.
      ReadModelsProjection.reset(db);
      this.startedOver = true;
      db.prepare("INSERT OR REPLACE INTO rm_meta (key, value) VALUES ('version', ?)").run(String(READ_MODEL_VERSION));
    }
    db.exec(READ_MODEL_SCHEMA);
    this.subscribers = new EmitSubscribers(db);
    this.deliveries = new DeliveriesReadModel(db, this.subscribers);
    this.sourceLogs = new SourceLogsReadModel(db);
    this.sourceEvents = new SourceEventsReadModel(db);
    this.listenerDispatches = new ListenerDispatchesReadModel(db, this.subscribers);
    this.sources = new SourcesReadModel(db);
    this.pendingRequests = new PendingRequestsReadModel(db);
    this.workflowRuns = new WorkflowRunsReadModel(db);
    const models: ComposedReadModel[] = [
      new AccountsReadModel(db), new WebhooksReadModel(db), new SubscriptionsReadModel(db), new ComponentsReadModel(db),
      this.sources, this.sourceEvents, this.sourceLogs, this.deliveries, this.pendingRequests,
      new WorkflowsReadModel(db), this.workflowRuns, new WorkflowStepDbReadModel(db),
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
    subscriptionsChanged(db);
    db.transaction(() => {
      for (const t of READ_MODEL_TABLES) db.exec(`DROP TABLE IF EXISTS ${t}`);
      db.exec('CREATE TABLE IF NOT EXISTS checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL)');
      db.prepare('DELETE FROM checkpoints WHERE name = ?').run('read-models');
    })();
  }

  /**
   * Drops every read model and replays the whole log into it, in large transactions
   * ({@link REBUILD_BATCH} events) into tables without their query-only indexes, which are
   * created after the load. Gives the same rows as folding the log incrementally: the same
   * handlers see the same events in the same order; only the commit boundaries differ. Nothing
   * is collected for side effects. Resolves with the position of the last event replayed (0n for
   * an empty log). The caller holds the data dir: nothing else may write meanwhile.
   *
   * Why the shortcuts are safe: the log, the read models and their checkpoint share one file in
   * WAL mode. The rebuild first checkpoints the WAL into the database file (synced), then turns
   * automatic checkpoints off, so the database file is not written again until the rebuild
   * finished: the rebuild only appends to the WAL, and only `synchronous = OFF` commits (no
   * fsync). A crash (process or power) can only lose a suffix of those WAL commits: WAL frames
   * carry a running checksum, so recovery keeps a prefix of them and the log itself (already in
   * the synced database file) is never at risk. The first commit marks `rm_meta` as
   * `rebuilding` and only the last one, after every index exists, restores the version, so a
   * rebuild cut short anywhere is seen at the next open as a schema change: the read models are
   * dropped and replayed from scratch. At the end the WAL is synced and checkpointed again with
   * the connection's own settings, so a finished rebuild is durable when this resolves. A WAL
   * grown beyond `walLimitBytes` is checkpointed the same way between two transactions (synced
   * before the file is written), after which the argument holds again for the WAL's new content.
   */
  async rebuild(readAll: LogReader, options: RebuildOptions = {}): Promise<bigint> {
    const db = this.db;
    const batch = options.batch ?? REBUILD_BATCH;
    const walLimit = options.walLimitBytes ?? REBUILD_WAL_LIMIT_BYTES;
    const saved = {
      synchronous: db.pragma('synchronous', { simple: true }) as number,
      cacheSize: db.pragma('cache_size', { simple: true }) as number,
      autocheckpoint: db.pragma('wal_autocheckpoint', { simple: true }) as number,
      tempStore: db.pragma('temp_store', { simple: true }) as number,
    };
    const setVersion = db.prepare("INSERT OR REPLACE INTO rm_meta (key, value) VALUES ('version', ?)");
    const setCheckpoint = db.prepare('INSERT OR REPLACE INTO checkpoints (name, position) VALUES (?, ?)');
    // Everything so far into the database file (synced), and an empty WAL to append to.
    const [first] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
    if (first && first.busy !== 0) throw new Error('cannot rebuild the read models: another connection holds the database');
    db.pragma('wal_autocheckpoint = 0');
    db.pragma('synchronous = OFF');
    db.pragma(`cache_size = -${REBUILD_CACHE_KIB}`);
    // The deferred indexes are built by sorting every row: on disk, as a log of any length allows
    // (the store keeps temporary data in memory, for its savepoints; a rebuild has none).
    db.pragma('temp_store = FILE');
    let position = 0n;
    try {
      db.transaction(() => {
        ReadModelsProjection.reset(db);
        setVersion.run(REBUILDING);
        db.exec(READ_MODEL_LOAD_SCHEMA);
      })();
      // One transaction: up to `batch` events, read page by page; returns the last position applied.
      const applyBatch = db.transaction((after: bigint): bigint => {
        let last = after;
        for (let n = 0; n < batch; ) {
          const events = readAll(last, Math.min(REBUILD_PAGE, batch - n));
          if (events.length === 0) break;
          // Requests still waiting for their run are written once, at the end of the transaction:
          // a page boundary often falls between a request and its run.
          this.apply(events, false);
          // A rebuild has no side effects: what the models collected for them is dropped.
          this.dropSideEffects();
          last = events[events.length - 1].position;
          n += events.length;
        }
        this.pendingRequests.endBatch();
        if (last !== after) setCheckpoint.run(this.name, last);
        return last;
      });
      const wasLive = this.live;
      this.live = false;
      try {
        for (;;) {
          let last: bigint;
          try {
            last = applyBatch(position);
          } catch (err) {
            this.discardCreatedDeliveries();
            throw err;
          }
          if (last === position) break;
          position = last;
          if (walSize(db) > walLimit) {
            db.pragma(`synchronous = ${saved.synchronous}`);
            db.pragma('wal_checkpoint(TRUNCATE)');
            db.pragma('synchronous = OFF');
          }
          // Between transactions, let timers and signals run (the admin command has no others).
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      } finally {
        this.live = wasLive;
      }
      db.transaction(() => {
        for (const ddl of READ_MODEL_DEFERRED_INDEXES) db.exec(ddl);
        setVersion.run(String(READ_MODEL_VERSION));
      })();
    } finally {
      db.pragma(`cache_size = ${saved.cacheSize}`);
      db.pragma(`synchronous = ${saved.synchronous}`);
      db.pragma(`wal_autocheckpoint = ${saved.autocheckpoint}`);
      db.pragma(`temp_store = ${saved.tempStore}`);
    }
    // With the connection's own settings again: the WAL is synced before it is copied, the
    // database file after; the rebuilt read models are durable from here on.
    db.pragma('wal_checkpoint(TRUNCATE)');
    return position;
  }

  /**
   * Applies a batch in log order. Call inside a transaction. `endBatch: false` leaves the batch's
   * waiting requests for a later call in the same transaction (a rebuild's pages).
   */
  apply(events: LogEvent[], endBatch = true): void {
    try {
      for (const stored of events) {
        // Handlers are registered only under the types this build knows (what asSluiceEvent checks):
        // another type finds none and is skipped.
        const handlers = this.handlers.get(stored.type as EventType);
        if (handlers === undefined) continue;
        const e = stored as LogSluiceEvent;
        for (let i = 0; i < handlers.length; i++) handlers[i](e);
      }
    } catch (err) {
      // The transaction rolls back: nothing of this call is written.
      this.workflowRuns.discard();
      throw err;
    }
    // Runs' steps and sends are written once per call (a rebuild's page too), before anything reads them.
    this.workflowRuns.endBatch();
    if (endBatch) this.pendingRequests.endBatch();
  }

  /** Deliveries created since the last call (call after the transaction committed; empty after a rollback). */
  takeCreatedDeliveries(): NewDelivery[] {
    return this.deliveries.takeCreated();
  }

  /** Forgets deliveries and emits of a batch whose transaction rolled back. */
  discardCreatedDeliveries(): void {
    // Subscribers cached inside a rolled-back transaction may name rows that are gone.
    subscriptionsChanged(this.db);
    this.dropCollected();
  }

  /** Forgets what the models collected for side effects (deliveries, dispatches, live emits). */
  private dropCollected(): void {
    this.dropSideEffects();
    this.pendingRequests.discard();
    this.workflowRuns.discard();
  }

  /** Forgets what the models collected for side effects after the commit, keeping the requests still to be written. */
  private dropSideEffects(): void {
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

/** Bytes in the WAL file of `db` (0 when there is none, e.g. in memory). */
function walSize(db: Database.Database): number {
  try {
    return statSync(`${db.name}-wal`).size;
  } catch {
    return 0;
  }
}
