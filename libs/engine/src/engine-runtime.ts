import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import type { SluiceConfig } from '@app/config';
import { DuplicateEventIdError, LogPrefetch, SqliteEventStore, streamPages, uuidv7 } from '@app/event-store';
import type { StoredEvent } from '@app/event-store';
import { asSluiceEvent, baseType, ComponentDefinition, EventTypes, SecretBox, Streams, timerPropOf } from '@app/domain';
import type { NewSluiceEvent, SluiceEvent } from '@app/domain';
import { dispatchFromRow, EmittedSummary, LoggedEntry, ReadModelsProjection } from '@app/projections';
import type { WorkflowRow } from '@app/projections';
import { CheckpointStore, ProcessorRunner } from '@app/processing';
import { SandboxSupervisor } from '@app/sandbox';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import type { AppDirectory } from './app-directory';
import { runCommittedSideEffects } from './committed-side-effects';
import { ConnectedAccountAuth } from './connected-account-auth';
import { DeliverySender } from './delivery-sender';
import { EngineQueries } from './engine-queries';
import { httpEventFromRecord, HttpRequestEvent } from './http-request-event';
import { InvocationHold } from './invocation-hold';
import { loadSecretBox } from './keyring';
import { ListenerDispatcher } from './listener-dispatcher';
import type { WorkflowListenerPort } from './listener-ports';
import { ensurePrivateDir, ensurePrivateFile, tightenIfPresent } from './private-files';
import { SourceActor } from './source-actor';
import { SqliteSourceSnapshots } from './source-snapshots';
import { TimerScheduler } from './timer-scheduler';

/** A saved component ready to run: its definition, bundle and the code id workers key isolates by. */
export interface CompiledComponent {
  definition: ComponentDefinition;
  bundle: string;
  codeHash: string;
}

type ExpectedRevision = bigint | 'no_stream' | 'any' | 'stream_exists';

/** A delivery attempt's outcome: once folded, the sender forgets it (`DeliverySender.outcomeFolded`). */
const DELIVERY_OUTCOMES = new Set<string>([EventTypes.deliverySucceeded, EventTypes.deliveryAttemptFailed, EventTypes.deliveryExhausted]);
/** Events that change a webhook's row (the sender keeps rows between deliveries). */
const WEBHOOK_CHANGES = new Set<string>([EventTypes.webhookUpdated, EventTypes.webhookSecretRotated, EventTypes.webhookDeleted]);
/** Events after which the earliest OAuth renewal due may have moved (the refresher's timer). */
const CONNECTED_ACCOUNT_CHANGES = new Set<string>([
  EventTypes.connectedAccountCreated, EventTypes.connectedAccountCredentialsRotated, EventTypes.connectedAccountTokensRefreshed,
  EventTypes.connectedAccountRefreshFailed, EventTypes.connectedAccountDeleted,
]);
/** Entries the runtime's look-up maps (endpoint keys, workflow rows) hold at most: a full map is emptied. */
export const MAX_REMEMBERED_KEYS = 10_000;
/** Events that change a workflow's definition (its row in `rm_workflows`, but `last_timer_at`), or remove it. */
const WORKFLOW_CHANGES = new Set<string>([EventTypes.workflowCreated, EventTypes.workflowUpdated, EventTypes.workflowDeleted]);
/** Source events after which an endpoint key may lead elsewhere (or nowhere): its status, config or existence changed. */
const ENDPOINT_CHANGES = new Set<string>([
  EventTypes.sourceDeployRequested, EventTypes.sourceDeployed, EventTypes.sourceDeployFailed,
  EventTypes.sourceUpdateRequested, EventTypes.sourceUpdated, EventTypes.sourceUpdateFailed,
  EventTypes.sourceDeleteRequested, EventTypes.sourceDeleted, EventTypes.sourceDeleteFailed,
]);

/**
 * The engine's internals, shared by its use cases and never exported from `@app/engine`: one
 * SQLite file for the log, the read models and the checkpoints; the read-models processor;
 * sandbox workers; one actor per source; the delivery sender and the timers. The chores that
 * follow a write (timers, actors, due deliveries) run when the read models commit the write's
 * events (`runCommittedSideEffects`), not in the code that wrote them.
 */
/** WAL pages after which a commit checkpoints the WAL into the file while the loop is saturated (SQLite's default is 1,000). */
const WAL_AUTOCHECKPOINT_PAGES = 16_384;
/**
 * The same while the loop has time to spare (`SqliteEventStoreOptions.walCheckpointPages`). The
 * checkpoint stalls the loop inside a commit: at 1,000 events/s, 16,384 pages came about every
 * second for 11-16 ms, and nearly all of the slowest requests queued behind one. 4,096 pages
 * throughout: p99 at 1,000/s 0.63x, but 1.17x CPU and 0.85x throughput at saturation, hence 16,384
 * there. 2,048 against 4,096: p99 at 1,000/s 0.82x, CPU per event 0.93x there and 0.91x at 200/s
 * (paired by round): a WAL of at most 2,048 pages fits the page cache (PAGE_CACHE_KIB), so no page
 * of it is read back from the file. 1,024 was worse again (p99 1.23x, CPU 1.03-1.17x against
 * 2,048: a checkpoint's two fsyncs and the hot pages copied twice as often). Alternated A/Bs, 4
 * rounds; docs/architecture.md, "The checkpoint's size follows the loop's load".
 */
const WAL_AUTOCHECKPOINT_QUIET_PAGES = 2_048;
/**
 * SQLite's page cache of the engine's connection (KiB; SQLite's default is 2,000). Not larger,
 * because a commit pays for the cache's size: when a B-tree split reorders the pages it
 * allocated, SQLite parks one page under the lock-byte page's number (262,145 with 4 KB pages)
 * for a moment, and the commit after it then walks the cache's whole hash table to drop pages
 * beyond the file's end. With 64 MB that walk over up to 16,384 cached pages cost about 35 us
 * per commit once the cache had filled: a commit of three random-key inserts took 98 us against
 * 65 us with 8 MB (`BENCH_ONLY=cache npm run bench`). 8 MB still holds the pages a WAL
 * accumulates between two checkpoints at 1,000 events/s (about 1,500 distinct pages).
 */
export const PAGE_CACHE_KIB = 8_192;
/** With SLUICE_SQLITE_CHECKPOINT=background (the default): at most one look at the WAL from the worker thread per this many ms of commits. */
const BACKGROUND_CHECKPOINT_MS = 250;
/**
 * With SLUICE_SQLITE_CHECKPOINT=background: the worker thread copies the WAL once this many frames
 * wait (about half a second at 200 events/s). Below the writer's own bound (WAL_AUTOCHECKPOINT_PAGES
 * in that mode) by more than a look's worth of frames at any load, so that bound is not reached.
 */
const BACKGROUND_CHECKPOINT_FRAMES = 1_024;

export class EngineRuntime {
  readonly store: SqliteEventStore<SluiceEvent>;
  readonly box: SecretBox;
  readonly queries: EngineQueries;
  readonly projections: ProcessorRunner;
  readonly sandbox: SandboxSupervisor;
  readonly sender: DeliverySender;
  readonly timers: TimerScheduler;
  /** Hands emits to listening sources and workflows (`rm_listener_dispatches`). */
  readonly dispatcher: ListenerDispatcher;
  /** Starts workflows subscribed as listeners; set by the workflows module (issue 8). */
  workflowListener?: WorkflowListenerPort;
  /** Live emits per source id, published once they are in the read models (SSE). */
  readonly emits = new EventEmitter().setMaxListeners(0);
  /** Live run and hook log entries per source id, published once they are in the read models (SSE). */
  readonly logs = new EventEmitter().setMaxListeners(0);
  /** A source's id once its deletion is in the read models: its live streams end. */
  readonly sourceGone = new EventEmitter().setMaxListeners(0);
  readonly sandboxDisabled: boolean;
  /** The apps each account sees (catalog and own). */
  readonly apps: AppDirectory;
  /** Connected accounts' credentials for runs, and the OAuth token refresher. */
  readonly auth: ConnectedAccountAuth;
  private readonly projection: ReadModelsProjection;
  private readonly actors = new Map<string, SourceActor>();
  /** Snapshots of the actors' states (derived, like the read models). */
  private readonly snapshots: SqliteSourceSnapshots;
  /**
   * What each endpoint key answered lately (null: no active source), for `EndpointUseCases.find`
   * on the hot path. Emptied after every committed source lifecycle event, before anything else
   * follows that commit, so it never answers with a state older than the read models.
   */
  readonly endpointTargets = new Map<string, { sourceId: string; accountId: string; customResponse: boolean } | null>();
  /**
   * The same for workflows' endpoint keys, and workflows' rows by id as runs start them
   * (`workflowDefinition`): emptied after every committed change of a workflow's definition.
   */
  readonly workflowEndpointTargets = new Map<string, { workflowId: string; accountId: string; customResponse: boolean } | null>();
  private readonly workflowRows = new Map<string, WorkflowRow>();
  private readonly compiled = new Map<string, CompiledComponent>();
  /** App prop names per code id (the bundle's hash): what `invoke` resolves connected accounts for. */
  private readonly appPropsByCode = new Map<string, string[]>();
  /** How long a request's run may wait on its way to the worker for the next ones (`invoke`). */
  private readonly invocationHold: InvocationHold;
  private live = false;

  constructor(readonly config: SluiceConfig, opts: { sandbox?: boolean } = {}) {
    this.sandboxDisabled = opts.sandbox === false;
    this.invocationHold = new InvocationHold(config.requestLingerMs, () => this.store.loopSaturated);
    ensurePrivateDir(config.dataDir);
    this.box = loadSecretBox(config.dataDir);
    const dbFile = join(config.dataDir, 'sluice.db');
    // Created 0600 before SQLite opens it: SQLite gives the -wal and -shm files the same mode.
    ensurePrivateFile(dbFile);
    tightenIfPresent(`${dbFile}-wal`, `${dbFile}-shm`, `${dbFile}-flush`);
    // The caller holds the data-dir lock (server, admin commands), so this process is the file's
    // only writer (soleWriter) and may keep SQLite's lock for its lifetime (SLUICE_SQLITE_LOCKING).
    const background = config.sqliteCheckpoint === 'background';
    this.store = new SqliteEventStore<SluiceEvent>({
      file: dbFile, synchronous: config.sqliteSync, locking: config.sqliteLocking, soleWriter: true, fsyncPlacement: config.fsyncPlacement,
      walBuffer: config.sqliteWalBuffer,
      walSync: config.sqliteWalSync,
      pageSize: config.sqlitePageSize,
      backgroundCheckpointMs: background ? BACKGROUND_CHECKPOINT_MS : undefined,
      backgroundCheckpointFrames: BACKGROUND_CHECKPOINT_FRAMES,
      // With the copy on the worker thread, the writer's own checkpoint is only the WAL's bound.
      walCheckpointPages: background
        ? { quiet: WAL_AUTOCHECKPOINT_PAGES, busy: WAL_AUTOCHECKPOINT_PAGES }
        : { quiet: WAL_AUTOCHECKPOINT_QUIET_PAGES, busy: WAL_AUTOCHECKPOINT_PAGES },
      lingerOnlyWithTimeToSpare: config.lingerWhenSaturated === false,
    });
    const db = this.store.db;
    // The log, the read models and the checkpoints share this file. Pages that are not in the WAL
    // are read through mmap; the page cache holds the pages written since the last checkpoint
    // and the others in use (see PAGE_CACHE_KIB for why it is not larger).
    db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
    db.pragma('mmap_size = 268435456');
    // A checkpoint copies every page the WAL holds back into the file (and syncs it) inside the
    // commit that crossed the limit, on the event loop. The same hot pages (the log's last leaf,
    // the read models' latest rows, the checkpoints) are rewritten by every commit, so a longer
    // WAL copies each of them once for many more commits: 16,384 pages (64 MB) instead of 1,000.
    // Measured at saturation: about 15% less CPU per event (docs/architecture.md, "Durability").
    // With inline checkpoints the store lowers it to WAL_AUTOCHECKPOINT_QUIET_PAGES while the loop
    // has time to spare; with background ones (the default) the worker thread copies the WAL long
    // before this bound (BACKGROUND_CHECKPOINT_FRAMES).
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    db.pragma(`journal_size_limit = ${WAL_AUTOCHECKPOINT_PAGES * this.store.pageSize}`);
    const projection = new ReadModelsProjection(db);
    this.projection = projection;
    this.snapshots = new SqliteSourceSnapshots(db);
    this.queries = new EngineQueries(db, {
      config, box: this.box, store: this.store, definition: (id) => this.component(id)?.definition,
    });
    this.projections = new ProcessorRunner(this.store, new CheckpointStore(db), {
      name: projection.name,
      transactional: true,
      apply: (events) => projection.apply(events),
      afterCommit: (events) => this.afterReadModelsCommit(events),
      afterRollback: () => projection.discardCreatedDeliveries(),
    });
    this.sandbox = new SandboxSupervisor({
      workers: config.sandboxWorkers,
      minWorkers: config.sandboxMinWorkers,
      egress: { allow: config.componentEgressAllow, allowVariable: 'SLUICE_COMPONENT_EGRESS_ALLOW' },
      defaultLimits: { memoryMb: config.sandboxMemoryMb, timeoutMs: config.sandboxTimeoutMs, cpuMs: config.sandboxTimeoutMs },
      outputLimits: config.runOutput,
      syncEntries: config.sandboxSyncEntry,
    });
    this.sender = new DeliverySender(this.store, this.queries, this.box, {
      retrySchedule: config.retrySchedule, timeoutMs: config.deliveryTimeoutMs, egress: { allow: config.egressAllow },
      concurrencyPerWebhook: config.deliveryConcurrencyPerWebhook,
    });
    this.timers = new TimerScheduler({
      liveSources: () => this.queries.liveSources(),
      timerOf: (id) => {
        const row = this.queries.source(id);
        const comp = row && this.component(row.component_id);
        return row && comp ? timerPropOf(comp.definition.props, JSON.parse(row.configured_props) as Record<string, unknown>) : undefined;
      },
      // From the log (via the read model): the last timer run, or the last activation when it
      // never fired since, so a restart neither loses nor repeats ticks.
      lastFire: (id) => {
        const row = this.queries.source(id);
        if (!row) return undefined;
        const last = Math.max(row.last_timer_at ?? 0, row.last_activated_at ?? 0);
        return last > 0 ? last : undefined;
      },
      fire: (id, event) => this.actor(id).run('timer', event),
    });
    this.apps = this.queries.appDirectory;
    this.auth = new ConnectedAccountAuth({
      queries: this.queries.apps, box: this.box, apps: this.apps,
      append: (stream, events, expectedRevision) => this.appendAndProject(stream, events, expectedRevision),
      revision: (stream) => this.store.streamRevision(stream),
      settle: () => this.settle(),
      // Token endpoints are the server's own requests: the same allow-list as deliveries.
      egress: { allow: config.egressAllow }, timeoutMs: config.deliveryTimeoutMs, sweepMs: config.oauthRefreshSweepMs,
    });
    this.dispatcher = new ListenerDispatcher({
      source: (id) => this.queries.source(id),
      runSource: async (id, event, dispatchId, hops) => (await this.actor(id).run('event', event, dispatchId, hops)) !== undefined,
      workflows: () => this.workflowListener,
      record: async (d) => {
        try {
          await this.store.append(Streams.listener(d.listenerId), [{ id: d.dispatchId, type: EventTypes.listenerDispatched, data: d, metadata: { actor: 'system' } }]);
        } catch (err) {
          // Recorded before (a repeated dispatch): the first record stands.
          if (!(err instanceof DuplicateEventIdError)) throw err;
        }
      },
      isPending: (id) => this.queries.listenerDispatchPending(id),
      pending: async (limit, skip) => {
        await this.settle();
        return this.queries.pendingListenerDispatches(limit, skip).map(dispatchFromRow);
      },
      pendingOf: async (listenerId, limit) => {
        await this.settle();
        return this.queries.pendingListenerDispatchesOf(listenerId, limit).map(dispatchFromRow);
      },
    });
  }

  /**
   * Side effects of a committed batch. Before `goLive` (start-up catch-up, admin commands) only
   * the read models are built: nothing is sent, scheduled or published.
   */
  private afterReadModelsCommit(events: StoredEvent[]): void {
    const created = this.projection.takeCreatedDeliveries();
    const emitted: EmittedSummary[] = this.projection.takeEmitted();
    const logged: LoggedEntry[] = this.projection.takeLogged();
    const dispatches = this.projection.takeCreatedDispatches();
    // Before anything is sent: the sender keeps webhook rows between deliveries.
    let renewalsMoved = false;
    for (const e of events) {
      if (DELIVERY_OUTCOMES.has(e.type)) {
        const d = e.data as { deliveryId: string; attempt: number };
        this.sender.outcomeFolded(d.deliveryId, d.attempt);
      } else if (WEBHOOK_CHANGES.has(e.type)) this.sender.forgetWebhook((e.data as { webhookId: string }).webhookId);
      else if (ENDPOINT_CHANGES.has(e.type)) this.endpointTargets.clear();
      else if (WORKFLOW_CHANGES.has(e.type)) {
        this.workflowEndpointTargets.clear();
        this.workflowRows.clear();
      }
      else if (CONNECTED_ACCOUNT_CHANGES.has(e.type)) renewalsMoved = true;
    }
    if (!this.live) return;
    // (Before start the refresher is not running; its start arms it.)
    if (renewalsMoved) this.auth.reschedule();
    // Before the dispatcher starts (recovery), it finds these rows in the read model instead.
    for (const d of dispatches) this.dispatcher.enqueue(d);
    // New deliveries go to the sender as soon as they are committed; after a restart the
    // sender finds them in the durable schedule instead.
    // Object.assign, not a spread followed by new members: see `metadataWithTime` in append-rules.ts.
    for (const d of created) this.sender.enqueue(Object.assign({}, d, { attempts: 0 }));
    for (const e of emitted) this.emits.emit(e.sourceId, e);
    for (const l of logged) this.logs.emit(l.sourceId, l);
    runCommittedSideEffects(events, {
      refreshTimer: (id) => this.timers.refresh(id),
      dropActor: (id) => this.actors.delete(id),
      endLiveStreams: (id) => this.sourceGone.emit(id),
      enqueueDueDeliveries: () => this.sender.enqueueDue(),
    });
  }

  /** Turns side effects on: deliveries, live emits, timers and actor chores follow commits from now on. */
  goLive(): void {
    this.live = true;
    this.projection.live = true;
  }

  /**
   * Starts the read models and waits until they caught up with the log. When opening dropped
   * them (another schema version, a rebuild cut short) and the log is not empty, they are rebuilt
   * in rebuild mode first instead of replayed batch by batch (the data dir is locked by then).
   */
  async startReadModels(): Promise<void> {
    if (this.projection.startedOver && (await this.store.headPosition()) > 0n) {
      await this.rebuildReadModels();
      return;
    }
    this.projections.start();
    await this.projections.caughtUp();
  }

  /** Drops every read model and rebuilds it from the log (admin; the data dir must be locked). */
  async rebuildReadModels(): Promise<void> {
    // Snapshots are derived from the log too: a rebuild starts every actor from its first event.
    this.snapshots.deleteAll();
    // The log is read ahead on a worker thread (another core) when the compiled worker is there,
    // started at the first read: after the rebuild's first checkpoint, which needs no other reader
    // (so a background checkpoint still running is waited for). That thread has a connection of
    // its own, which exclusive locking keeps out: then the rebuild reads the log on its own connection.
    await this.store.checkpointer?.idle();
    let prefetch: LogPrefetch | undefined;
    let started = this.config.sqliteLocking === 'exclusive';
    try {
      // Prepared statements re-prepare against the new tables.
      await this.projection.rebuild((after, maxCount) => {
        if (!started) {
          started = true;
          prefetch = LogPrefetch.open(this.store.db.name, after);
        }
        return prefetch ? prefetch.read(after, maxCount) : this.store.readLogSync(after, maxCount);
      });
    } finally {
      await prefetch?.close();
    }
    // Picks up from the rebuilt checkpoint (nothing is left when nobody else appends).
    this.projections.start();
    await this.projections.caughtUp();
  }

  /**
   * Refuses a write while the read models are failed (`ProjectionFailedError`): the write could
   * not be read back, and every check a use case makes reads them.
   */
  assertWritable(): void {
    const failed = this.projections.error;
    if (failed) throw failed;
  }

  /** Appends and waits until the read models reflect the append (read-your-writes for the API). */
  async appendAndProject(stream: string, events: NewSluiceEvent[], expectedRevision?: ExpectedRevision): Promise<void> {
    this.assertWritable();
    const r = await this.store.append(stream, events.map((e) => Object.assign({}, e, { id: e.id ?? uuidv7() })), { expectedRevision });
    await this.projections.waitFor(r.position);
  }

  /** Waits until the read models include everything appended so far. */
  async settle(): Promise<void> {
    await this.projections.waitFor(await this.store.headPosition());
  }

  /** Whether invoking this code resolves connected accounts in the server first (it has app props). */
  needsAccounts(codeId: string): boolean {
    return (this.appPropsByCode.get(codeId)?.length ?? 0) > 0;
  }

  /**
   * Every sandbox call the engine makes on behalf of an account goes through here (source runs and
   * hooks, workflow steps, action runs, prop options and reloads): the one place where what the
   * account configured becomes what the guest sees (app props' connected accounts, issue 9).
   *
   * An app prop's `{authProvisionId}` becomes `{ $auth: credentials }` (an OAuth token due for
   * renewal is renewed first). Only props the component declares as `app` are resolved, so a
   * value that merely looks like a reference (from an HTTP body, say) never reaches credentials.
   * An account that is gone, another account's, or expired beyond renewal fails the invocation
   * without calling the sandbox: a result with `ok: false` whose error (also the last log line)
   * names the prop and the account.
   */
  invoke(accountId: string | undefined, inv: SandboxInvocation, holdable = false): Promise<SandboxResult> {
    const holdMs = holdable ? this.invocationHold.next() : 0;
    // The owner travels with the run: a sandbox worker holding only one account's instances
    // enters their runs on its own thread (SandboxInvocation.account).
    if (accountId !== undefined && inv.account !== accountId) inv.account = accountId;
    const appProps = this.appPropsByCode.get(inv.codeId);
    // Not async: a component without app props gets the sandbox's own promise, not one more that
    // follows it (an async function returning a promise adds a promise and two turns of microtasks).
    if (appProps === undefined || appProps.length === 0) return this.sandbox.invoke(inv, holdMs);
    return this.invokeWithAccounts(accountId, inv, appProps, holdMs);
  }

  private async invokeWithAccounts(accountId: string | undefined, inv: SandboxInvocation, appProps: string[], holdMs = 0): Promise<SandboxResult> {
    const resolved = await this.auth.resolve(accountId, inv.props, appProps);
    if ('error' in resolved) {
      const error = { name: 'ConnectedAccountError', message: resolved.error, kind: 'invalid' as const };
      return {
        ok: false, error, emits: [], dbWrites: [], durationMs: 0, cpuMs: 0,
        logs: [{ level: 'error', message: `${error.name}: ${error.message}`, ts: Date.now() }],
      };
    }
    // Props with their accounts are made for this call: not the caller's stable objects.
    return this.sandbox.invoke(Object.assign({}, inv, { props: resolved.props, stableConfig: false }), holdMs);
  }

  /** The actor of a source (created on first use). */
  actor(sourceId: string): SourceActor {
    let a = this.actors.get(sourceId);
    if (!a) {
      a = new SourceActor(sourceId, {
        store: this.store,
        box: this.box,
        publicUrl: () => this.config.publicUrl,
        component: (id) => this.component(id),
        invoke: (inv: SandboxInvocation, accountId: string | undefined, holdable?: boolean): Promise<SandboxResult> => this.invoke(accountId, inv, holdable),
        maxDbBytesPerSource: this.config.runOutput.maxDbBytesPerSource,
        snapshots: this.snapshots,
        snapshotEvery: this.config.sourceSnapshotEvery,
        recordLingerMs: this.config.requestLingerMs,
      });
      this.actors.set(sourceId, a);
    }
    return a;
  }

  /**
   * A workflow's row as the read models have it, for starting runs (its definition, version,
   * account and activity; not `last_timer_at`, which timers' runs move without a definition change).
   */
  workflowDefinition(id: string): WorkflowRow | undefined {
    let row = this.workflowRows.get(id);
    if (!row) {
      row = this.queries.workflows.workflow(id);
      if (!row) return undefined;
      if (this.workflowRows.size >= MAX_REMEMBERED_KEYS) this.workflowRows.clear();
      this.workflowRows.set(id, row);
    }
    return row;
  }

  /** A saved component's definition and bundle (cached: saved components never change). */
  component(id: string): CompiledComponent | undefined {
    let c = this.compiled.get(id);
    if (!c) {
      const row = this.queries.component(id);
      if (!row) return undefined;
      // Workers keep warm isolates per code id: key them by the bundle, not the source text, since
      // the same code can bundle other package versions (unpinned imports) in another component.
      c = {
        definition: JSON.parse(row.definition) as ComponentDefinition,
        bundle: row.bundle,
        codeHash: createHash('sha256').update(row.bundle).digest('hex'),
      };
      this.compiled.set(id, c);
      this.appPropsByCode.set(c.codeHash, c.definition.props.filter((p) => baseType(p.type).base === 'app').map((p) => p.name));
    }
    return c;
  }

  /** Finishes interrupted lifecycle transitions, then runs recorded-but-unrun requests. */
  async recover(): Promise<void> {
    for (const src of this.queries.liveSources()) {
      if (src.status !== 'deployed') await this.actor(src.id).recover().catch((err) => console.error(`recovering ${src.id} failed`, err));
    }
    for (const req of this.queries.pendingRequests()) {
      // One record that cannot be read back must not keep the server from starting, nor the others from running.
      const event = await this.pendingRequestEvent(req.source_id, req.request_id, BigInt(req.pos))
        .catch((err: unknown) => console.error(`request ${req.request_id} of ${req.source_id} could not be read back to run it`, err));
      if (event) void this.actor(req.source_id).run('http', event, req.request_id).catch((err) => console.error(`request ${req.request_id} failed`, err));
    }
  }

  /**
   * A pending request's record. The pending row names its log position, so that is one read; only
   * if the event there is not the request (a store whose positions are not plain integers) is the
   * source's inbox searched, page by page. Scanning the inbox for every pending request made a
   * recovery cost the inbox's whole history per request.
   */
  async pendingRequestEvent(sourceId: string, requestId: string, position: bigint): Promise<HttpRequestEvent | undefined> {
    const inbox = Streams.inbox(sourceId);
    const requestIn = (stored: StoredEvent): HttpRequestEvent | undefined => {
      const e = stored.streamName === inbox ? asSluiceEvent(stored) : undefined;
      return e?.type === EventTypes.httpRequestReceived && e.data.requestId === requestId ? httpEventFromRecord(e.data, this.config.publicUrl) : undefined;
    };
    // A store that cannot read from that position (it is not one of its own) throws: search instead.
    const [atPosition] = position > 0n ? await this.store.readAll({ after: position - 1n, maxCount: 1 }).catch(() => []) : [];
    const found = atPosition && atPosition.position === position ? requestIn(atPosition) : undefined;
    if (found) return found;
    for await (const page of streamPages(this.store, inbox)) {
      for (const stored of page) {
        const event = requestIn(stored);
        if (event) return event;
      }
    }
    return undefined;
  }
}
