import { closeSync, fdatasync, fdatasyncSync, openSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { LazyLogEvent, LazyStoredEvent } from './lazy-log-event';
import { prepareAppend, retryMatchesExpected, satisfiesExpectedRevision, type SerializedEvent } from './append-rules';
import { CatchUpSubscription } from './catch-up-subscription';
import { DuplicateEventIdError, StoreUnavailableError, WrongExpectedRevisionError } from './errors';
import type {
  AppendOptions,
  AppendResult,
  BatchHandler,
  EventStore,
  ExpectedRevision,
  EventShape,
  LogEvent,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  StoredEvent,
  SubscribeToAllOptions,
  Subscription,
} from './event-store.port';
import { READ_LOG_SQL, type LogRow } from './log-read.sql';
import { FsyncPlacement, FsyncPlacementMode } from './fsync-placement';
import { WalCheckpointer } from './wal-checkpointer';
import { openWalSync, type WalSync } from './wal-sync';
import { ArrivalPace } from './arrival-pace';
import { loadWalBuffer } from './wal-buffer';
import { loopTimer } from './loop-timer';
import { writeStatements, type WriteStatement, type WriteStatements } from './write-statements';

/** How to open a {@link SqliteEventStore}. */
export interface SqliteEventStoreOptions {
  /** Path of the SQLite file (created with its schema when missing). */
  file: string;
  /**
   * `normal` (default): a commit survives a crash of the process but the last commits can be
   * lost on power failure. `full`: every group commit is fsynced before its appends resolve.
   */
  synchronous?: 'full' | 'normal';
  /** How long a write waits for another connection's lock before failing. Default 5000 ms. */
  busyTimeoutMs?: number;
  /**
   * `exclusive`: the connection takes the file's lock at its first write and keeps it until it
   * closes, and WAL's index lives in this process's heap instead of the `-shm` file, so no
   * transaction pays the shared-memory and fcntl locking of a shared database (about 6 lock
   * calls per delivered event at 200/s, `strace -c -f` on the server). No other connection (in any
   * process) can read or write the file meanwhile: only for a process that is the file's only
   * user. `normal` (default): SQLite's usual locking, other connections may read (a background
   * checkpoint's, `sqlite3`).
   */
  locking?: 'exclusive' | 'normal';
  /**
   * Load the extension that writes a commit's WAL frames in one call (`loadWalBuffer`) before the
   * file is opened; default true. It is process-wide: once loaded, every connection opened later
   * uses it, whatever this says.
   */
  walBuffer?: boolean;
  /**
   * No other connection writes the file (its caller holds a lock of its own, as the Sluice server
   * holds the data-dir lock): the log's head and the last revisions of recently written streams
   * are then kept in memory as of the last commit, as with `exclusive` locking (which implies it),
   * instead of being read back from the table at each group commit and append.
   */
  soleWriter?: boolean;
  /**
   * Copy the WAL back into the file on a worker thread (its own connection, a PASSIVE checkpoint
   * at most every this many ms after commits) instead of only in the commit that crosses
   * `wal_autocheckpoint`, on the event loop. Needs `locking: 'normal'`. Off (undefined) by default.
   */
  backgroundCheckpointMs?: number;
  /**
   * With `backgroundCheckpointMs`: the thread copies the WAL only once this many frames wait to be
   * copied (see {@link WalCheckpointer}). Default 0: at every look.
   */
  backgroundCheckpointFrames?: number;
  /**
   * With `synchronous: 'full'`: where the WAL's fsync runs ({@link FsyncPlacement}): `auto` on
   * the event loop while the loop is not busy, else on the libuv pool; `loop` or `pool` always
   * there. Default `pool`. Tests may pass a placement of their own.
   */
  fsyncPlacement?: FsyncPlacementMode | FsyncPlacement;
  /**
   * `wal_autocheckpoint` by the event loop's load, as `fsyncPlacement: 'auto'` measures it:
   * `quiet` pages while the loop has time to spare, `busy` once it has not. By the load alone: a
   * slow fsync that sends the next ones to the pool for a while (`FsyncPlacement`) leaves the
   * checkpoints as they were (it used to make them the busy size for its 5 s: at 1,000 events/s
   * on a disk with an fsync of 11-13 ms every few seconds, every checkpoint but a few was then
   * the busy size, a 13-21 ms stall). A checkpoint runs inside the commit that crosses the limit
   * and stalls the loop for as long as it copies, so a quiet loop takes shorter stalls more
   * often, and a saturated one fewer, longer ones that copy each hot page once for more commits.
   * Unset: the connection's own setting stays.
   */
  walCheckpointPages?: { quiet: number; busy: number };
  /**
   * Appends linger (`AppendOptions.lingerMs`) only while the event loop has time to spare, as the
   * `auto` fsync placement measures it: once the loop is saturated, each of its turns queues
   * many appends, which share the turn's commit without waiting, and a linger only holds the
   * callers back (at saturation the callers are who brings the next requests). Default false.
   */
  lingerOnlyWithTimeToSpare?: boolean;
  /**
   * SQLite's page size (bytes, a power of two from 512 to 65,536) for a file this store creates. A
   * file that exists keeps the size it was made with (SQLite changes it only by `VACUUM`): see
   * {@link SqliteEventStore.pageSize} for the size in use. Default SQLite's, 4,096.
   */
  pageSize?: number;
  /**
   * With `synchronous: 'full'`: how the WAL is synced. `light` (default): a light sync where it is
   * as durable as `fdatasync` and cheaper, the WAL's dirty pages and the disk's cache flush
   * without its inode (see `native/wal-sync.c`: ext2/3/4 without data journalling, while the WAL
   * is overwritten in place within the size and header of its last full sync), `fdatasync`
   * elsewhere; the sync runs where it is waited for. `ring`: the same, but a sync on the event
   * loop is started at its commit on the kernel's io_uring workers and waited for where the loop
   * syncs (so the disk works meanwhile), where the kernel allows io_uring (the default at stop
   * 69; in the server no better in 28 alternated rounds, see docs/architecture.md).
   * `fdatasync`: always `fdatasync`.
   */
  walSync?: 'light' | 'ring' | 'fdatasync';
}

/**
 * A synchronous fold that a {@link SqliteEventStore} runs inside the writer's own transaction, so
 * a group's events and what it folds from them (read models, their checkpoint) commit together:
 * one commit instead of two, and no read of the log back. The store folds a group only when the
 * fold is exactly caught up (`position` equals the head before the group); otherwise the fold's
 * subscription catches up as usual.
 */
export interface InlineFold {
  /** The last position the fold applied (-1n or less while it cannot take a group). */
  position(): bigint;
  /** Applies a group's events (in position order) and records the checkpoint; a throw leaves them to the subscription. */
  apply(events: StoredEvent[]): void;
  /** Called after the group's transaction ended: `committed` false when the fold's writes were undone. */
  settled(events: StoredEvent[], committed: boolean): void;
  /**
   * Called inside the transaction of a group that appends events the fold does not apply (it is
   * not caught up, or it threw and the group is written again without it), before its commit: a
   * fold whose checkpoint says "every commit is folded" (`FOLLOWS_LOG` of the processing library)
   * records its real position there. A throw aborts the group. `unfoldedSettled` follows once
   * the transaction ended.
   */
  unfolded?(): void;
  unfoldedSettled?(committed: boolean): void;
}

interface PendingAppend {
  stream: string;
  expected: ExpectedRevision;
  /** Resolved at its commit rather than after the next fsync (`durability: 'commit'`). */
  commitOnly: boolean;
  /** It inserted its events (not a retry found already stored). */
  written?: boolean;
  events: SerializedEvent[];
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
  result?: AppendResult;
  error?: unknown;
}

/** Raw row of `events` in column order: position, id, stream, revision, type, data, metadata. */
export type EventRow = [number, string, string, number, string, string, string];

/**
 * What writing one append inside its savepoint gave: its result (`written` when it inserted its
 * events, not when it found them already stored), or the id that already existed.
 */
type WriteOutcome = { result: AppendResult; written?: boolean } | { collidedId: string };

const COLUMNS = 'position, id, stream, revision, type, data, metadata';
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS events (
    position INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    stream TEXT NOT NULL,
    revision INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    metadata TEXT NOT NULL
  ) STRICT;
  CREATE UNIQUE INDEX IF NOT EXISTS events_stream_revision ON events (stream, revision);
`;

/**
 * The embedded event store: one SQLite file in WAL mode, table `events`.
 *
 * Guarantees: positions are 1-based and gap-free in commit order; revisions are 0-based per
 * stream; an append is atomic and checked against its expected revision at commit time.
 * Appends issued while the writer is idle (the same tick) or busy are grouped into ONE
 * transaction, each inside its own savepoint, so a failing append rolls back alone and the
 * others of its group commit; every append of a group resolves only after that commit.
 * Appends are idempotent on event ids: repeating an append whose ids are already stored in that
 * stream at matching revisions returns the original result and writes nothing.
 */
export class SqliteEventStore<E extends EventShape = EventShape> implements EventStore<E> {
  /**
   * The underlying connection. Read models may keep their own tables in this file and commit
   * their checkpoint in their own transactions here; a transaction left open across an await
   * delays the event writer until it ends.
   */
  readonly db: Database.Database;
  /** Times the store changed `wal_autocheckpoint` for the loop's load ({@link SqliteEventStoreOptions.walCheckpointPages}). */
  checkpointResizes = 0;

  private queue: PendingAppend[] = [];
  private readonly walCheckpointPages?: { quiet: number; busy: number };
  /**
   * True while the `auto` fsync placement found the event loop saturated at its last measure (see
   * {@link FsyncPlacement.loopSaturated}); false with a fixed placement, or without fsyncs.
   */
  get loopSaturated(): boolean {
    return this.fsyncPlacement.loopSaturated;
  }

  /** {@link SqliteEventStoreOptions.lingerOnlyWithTimeToSpare}, as this store was opened. */
  readonly lingerOnlyWithTimeToSpare: boolean;
  /** The file's page size in bytes: {@link SqliteEventStoreOptions.pageSize} for a new file, the file's own otherwise. */
  readonly pageSize: number;
  /** Whether the hot writes run through `lean-statements` ({@link writeStatements}); false: through better-sqlite3's `run()`. */
  get leanWrites(): boolean {
    return this.writes.lean;
  }
  /** The `wal_autocheckpoint` this store last set (undefined: never). */
  private checkpointPages?: number;
  private flushScheduled = false;
  private closed = false;
  private readonly appendedListeners = new Set<(headPosition: bigint) => void>();
  /**
   * With exclusive locking (or `soleWriter`) no other connection can write the log, so the head and the last
   * revisions of recently written streams are kept as of the last commit, instead of being read
   * back from the table at each group commit and append. Only committed values go in.
   */
  private readonly committed?: { head?: number; revisions: Map<string, number> };
  private readonly subscriptions = new Set<CatchUpSubscription>();

  private inlineFold?: InlineFold;
  private readonly beginStmt: Database.Statement;
  private readonly commitStmt: Database.Statement;
  private readonly rollbackStmt: Database.Statement;
  private readonly savepointStmt: Database.Statement;
  private readonly releaseStmt: Database.Statement;
  private readonly rollbackToStmt: Database.Statement;
  /** The connection's write statements (see `writeStatements`: the store's hot writes skip better-sqlite3's per-call costs where they can). */
  private readonly writes: WriteStatements;
  /** The log's one-row INSERT. */
  private readonly insertStmt: WriteStatement;
  private readonly headStmt: Database.Statement<[], number | null>;
  private readonly streamRevisionStmt: Database.Statement<[string], number>;
  private readonly byIdStmt: Database.Statement<[string], { stream: string; revision: number; position: number }>;
  private readonly readAllStmt: Database.Statement<[bigint, number], EventRow>;
  private readonly readLogStmt: Database.Statement<[bigint, number], LogRow>;
  private readonly readStreamStmt: Database.Statement<[string, bigint, number], EventRow>;

  constructor(options: SqliteEventStoreOptions) {
    if (options.walBuffer !== false && options.file !== ':memory:') loadWalBuffer();
    const db = new Database(options.file);
    try {
      db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
      // Set before the first access in WAL mode, so the WAL index is kept in heap memory.
      if (options.locking === 'exclusive') db.pragma('locking_mode = EXCLUSIVE');
      // Only a file without pages yet takes it, and only before it is in WAL mode.
      if (options.pageSize !== undefined) db.pragma(`page_size = ${checkedPageSize(options.pageSize)}`);
      const mode = db.pragma('journal_mode = WAL', { simple: true });
      if (mode !== 'wal' && !db.memory) {
        throw new Error(`${options.file} could not be switched to WAL mode (got ${String(mode)})`);
      }
      // 'full' durability is kept without blocking the event loop: SQLite commits with NORMAL
      // (WAL frames written, no fsync) and the store fsyncs the WAL file on the libuv pool before
      // resolving the group's appends (see `afterCommit`).
      db.pragma('synchronous = NORMAL');
      // Savepoints (an append of several events, the inline fold) keep the pages they change in a
      // sub-journal, so that ROLLBACK TO can put them back. By default that journal spills to a
      // temporary file past 64 KiB, which a group commit with its fold passes: every page then
      // cost two more pwrite calls (about 28 per delivered event at 200/s, where the WAL's own
      // frames take 37). In memory it costs a copy of the page.
      db.pragma('temp_store = MEMORY');
      db.exec(SCHEMA);
      this.pageSize = db.pragma('page_size', { simple: true }) as number;
      if (options.synchronous === 'full' && !db.memory) {
        this.walFd = openSync(`${options.file}-wal`, 'r');
        const mode = options.walSync ?? 'light';
        if (mode !== 'fdatasync') {
          this.walSync = openWalSync(options.file, this.walFd, (reason) => (this.walSyncFallback = reason), mode === 'ring') ?? undefined;
          this.walSyncRing = mode === 'ring' && this.walSync !== undefined;
        } else this.walSyncFallback = 'walSync: fdatasync';
      } else if (!db.memory) this.writebackFd = openSync(`${options.file}-wal`, 'r');
      this.walCheckpointPages = options.walCheckpointPages;
      this.lingerOnlyWithTimeToSpare = options.lingerOnlyWithTimeToSpare === true;
      const placement = options.fsyncPlacement ?? 'pool';
      this.fsyncPlacement = typeof placement === 'string' ? new FsyncPlacement(placement) : placement;
      if (options.backgroundCheckpointMs !== undefined) {
        if (options.locking === 'exclusive' || db.memory) {
          throw new Error('background checkpoints need a database file in normal locking mode (another connection must reach the WAL index)');
        }
        this.checkpointer = new WalCheckpointer(
          options.file, options.synchronous === 'full' ? 'FULL' : 'NORMAL', options.backgroundCheckpointMs, options.backgroundCheckpointFrames ?? 0,
        );
      }
    } catch (error) {
      db.close();
      this.walSync?.close();
      if (this.walFd !== undefined) closeSync(this.walFd);
      if (this.writebackFd !== undefined) closeSync(this.writebackFd);
      throw error;
    }
    this.db = db;
    if (options.locking === 'exclusive' || options.soleWriter) this.committed = { revisions: new Map() };
    this.beginStmt = db.prepare('BEGIN IMMEDIATE');
    this.commitStmt = db.prepare('COMMIT');
    this.rollbackStmt = db.prepare('ROLLBACK');
    this.savepointStmt = db.prepare('SAVEPOINT event_store_append');
    this.releaseStmt = db.prepare('RELEASE event_store_append');
    this.rollbackToStmt = db.prepare('ROLLBACK TO event_store_append');
    this.writes = writeStatements(db);
    this.insertStmt = this.writes.prepare(`INSERT INTO events (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`);
    this.headStmt = db.prepare<[], number | null>('SELECT max(position) FROM events').pluck();
    this.streamRevisionStmt = db
      .prepare<[string], number>('SELECT revision FROM events WHERE stream = ? ORDER BY revision DESC LIMIT 1')
      .pluck();
    this.byIdStmt = db.prepare('SELECT stream, revision, position FROM events WHERE id = ?');
    this.readAllStmt = db
      .prepare<[bigint, number], EventRow>(`SELECT ${COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?`)
      .raw(true);
    this.readLogStmt = db.prepare<[bigint, number], LogRow>(READ_LOG_SQL).raw(true);
    this.readStreamStmt = db
      .prepare<[string, bigint, number], EventRow>(
        `SELECT ${COLUMNS} FROM events WHERE stream = ? AND revision >= ? ORDER BY revision LIMIT ?`,
      )
      .raw(true);
  }

  /** Opens (and creates when missing) the store; the async twin of the constructor. */
  static async open(options: SqliteEventStoreOptions): Promise<SqliteEventStore> {
    return new SqliteEventStore(options);
  }

  append(stream: string, events: readonly NewEvent<E>[], options?: AppendOptions): Promise<AppendResult> {
    if (this.closed) {
      return Promise.reject(new StoreUnavailableError('the event store is closed'));
    }
    let prepared: ReturnType<typeof prepareAppend>;
    try {
      prepared = prepareAppend(stream, events, options);
    } catch (error) {
      return Promise.reject(error);
    }
    const commitOnly = options?.durability === 'commit';
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({ stream, expected: prepared.expected, events: prepared.events, commitOnly, resolve, reject });
      const now = performance.now();
      if (!commitOnly) this.arrivals.note(now);
      let linger = options?.lingerMs ?? 0;
      if (linger > 0 && options?.lingerOnlyWhenBusy && !this.arrivals.busy(now, linger)) linger = 0;
      // Once the loop is saturated, a turn's appends share its commit without waiting: a linger
      // would only hold back callers that wait for the fsync (lingerOnlyWithTimeToSpare).
      if (linger > 0 && !commitOnly && this.lingerOnlyWithTimeToSpare && this.fsyncPlacement.loopSaturated) linger = 0;
      if (options?.afterSyncInProgress && commitOnly && this.syncing) this.flushAfterSync = true;
      else if (linger > 0) this.flushBy(Date.now() + linger);
      else this.scheduleFlush();
    });
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    const from = options.fromRevision ?? 0n;
    return storedEventsFromRows(this.readStreamStmt.all(stream, from < 0n ? 0n : from, limitOf(options.maxCount)));
  }

  async streamRevision(stream: string): Promise<bigint> {
    return BigInt(this.currentRevision(stream));
  }

  async readAll(options: ReadAllOptions = {}): Promise<StoredEvent[]> {
    return this.readAllSync(options.after ?? 0n, limitOf(options.maxCount));
  }

  async headPosition(): Promise<bigint> {
    return BigInt(this.currentHead());
  }

  /** The position of the last committed event (0n for an empty log), read now. */
  committedHead(): bigint {
    return BigInt(this.committed?.head ?? this.currentHead());
  }

  subscribeToAll(handler: BatchHandler, options?: SubscribeToAllOptions): Subscription {
    if (this.closed) throw new StoreUnavailableError('the event store is closed');
    const subscription: CatchUpSubscription = new CatchUpSubscription(
      {
        readAll: (after, maxCount) => this.readAllSync(after, maxCount),
        headPosition: () => BigInt(this.currentHead()),
        onAppended: (listener) => this.onAppended(listener),
      },
      handler,
      options,
      () => this.subscriptions.delete(subscription),
    );
    this.subscriptions.add(subscription);
    return subscription;
  }

  /**
   * Registers (or, with undefined, removes) the fold run inside the writer's transaction; see
   * {@link InlineFold}. One at a time.
   */
  setInlineFold(fold: InlineFold | undefined): void {
    this.inlineFold = fold;
  }

  /**
   * Calls `listener` with the new head position after each commit that appended events, once
   * per group commit. A listener that throws is reported as an uncaught exception; it does not
   * affect the appends. Returns the function that removes the listener.
   */
  onAppended(listener: (headPosition: bigint) => void): () => void {
    this.appendedListeners.add(listener);
    return () => this.appendedListeners.delete(listener);
  }

  /**
   * Commits the appends already issued, stops the subscriptions (waiting for handlers in
   * progress) and closes the file. Appends issued afterwards fail with StoreUnavailableError.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.queue.length > 0) this.flush();
    if (this.syncing || this.awaitingSync.length > 0) await new Promise<void>((r) => this.syncIdleWaiters.push(r));
    this.lingerTimer.close();
    this.lazySync.close();
    if (this.writebackTimer) clearTimeout(this.writebackTimer);
    if (this.writebackInFlight) await new Promise<void>((r) => this.writebackWaiters.push(r));
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    await this.checkpointer?.close();
    this.db.close();
    this.checkpointer?.closeIndexFile();
    this.walSync?.close();
    if (this.walFd !== undefined) closeSync(this.walFd);
    if (this.writebackFd !== undefined) closeSync(this.writebackFd);
  }

  /**
   * An append that may linger: the queue is written by the next flush anyway (another append's,
   * or this timer's at the earliest deadline of the lingering appends queued).
   */
  private flushBy(deadline: number): void {
    if (this.flushScheduled || deadline >= this.lingerDeadline) return;
    this.lingerDeadline = deadline;
    this.lingerTimer.start(Math.max(0, deadline - Date.now()));
  }

  /**
   * Armed for the earliest lingering append, and nearly always stopped early (the next commit
   * takes the append along). A `loopTimer`, whose stop wakes nothing: a cleared `setTimeout`
   * still woke the loop at its time, about one wake-up per event at 10 events a second for the
   * request's linger and one for the delivery outcome's (issue 10).
   */
  private readonly lingerTimer = loopTimer(() => {
    this.lingerDeadline = Infinity;
    this.flush();
  });
  /** The earliest deadline of the lingering appends queued (`Date.now()` ms), Infinity when none is. */
  private lingerDeadline = Infinity;
  /** The pace of the appends that wait for an fsync (for `lingerOnlyWhenBusy`). */
  private readonly arrivals = new ArrivalPace();

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // setImmediate rather than a microtask: callers that await something before appending
    // within the same turn of the event loop still land in the same group commit.
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  /**
   * Sets `wal_autocheckpoint` for the loop's load before a commit ({@link SqliteEventStoreOptions.walCheckpointPages}).
   * The pragma is written only when the load changes sides, and left alone if something else set
   * it meanwhile (a rebuild turns automatic checkpoints off while it runs).
   */
  private sizeCheckpoints(): void {
    const sizes = this.walCheckpointPages;
    if (!sizes) return;
    const pages = this.fsyncPlacement.loopHasTimeToSpare ? sizes.quiet : sizes.busy;
    if (pages === this.checkpointPages) return;
    const current = this.db.pragma('wal_autocheckpoint', { simple: true }) as number;
    if (this.checkpointPages !== undefined && current !== this.checkpointPages) return;
    this.db.pragma(`wal_autocheckpoint = ${pages}`);
    this.checkpointPages = pages;
    this.checkpointResizes++;
  }

  /** Writes every queued append in one transaction, folded into the read models in it when the fold is caught up. */
  private flush(): void {
    if (this.lingerDeadline !== Infinity) {
      this.lingerTimer.stop();
      this.lingerDeadline = Infinity;
    }
    if (this.queue.length === 0) return;
    if (this.db.inTransaction) {
      // A read model holds a transaction open across an await; BEGIN would fail and a savepoint
      // would tie our appends to its outcome, so wait for it to end.
      if (this.closed) {
        this.failAll(this.takeQueue(), new StoreUnavailableError('closed while a transaction was open'));
      } else {
        this.flushScheduled = true;
        setTimeout(() => {
          this.flushScheduled = false;
          this.flush();
        }, 1);
      }
      return;
    }
    const group = this.takeQueue();
    this.sizeCheckpoints();
    let written = this.writeGroup(group);
    if (!written) return;
    let folded = written.head !== written.startHead ? this.foldInline(group, written.startHead) : undefined;
    if (folded === null) {
      // The fold threw, and its writes were undone with the whole transaction (it runs without a
      // savepoint of its own): the group is written again, without the fold, whose subscription
      // will meet the same events and report the failure its own way. Nothing else touched the
      // database in between, so the appends get the same positions and revisions.
      folded = undefined;
      written = this.writeGroup(group);
      if (!written) return;
    }
    const { head, startHead, revisions } = written;
    // Events the fold did not apply: it records where it really is, in this transaction.
    const unfolded = !folded && head !== startHead ? this.inlineFold : undefined;
    try {
      unfolded?.unfolded?.();
      this.commitStmt.run();
    } catch (error) {
      this.abort(group, error);
      if (folded) this.settleFold(folded, false);
      unfolded?.unfoldedSettled?.(false);
      return;
    }
    // The disk starts on the commit's pages while the fold's side effects run, so the sync that
    // follows waits less for them, or not at all (see "A sync of the WAL without its inode").
    // Only while the syncs run on the loop: once they go to the pool (a saturated loop, a slow
    // disk), the pool's sync starts the writeback itself, off the loop, which has no time for the
    // block layer's work and the virtual disk's doorbell at every commit.
    if (this.walSync && this.fsyncPlacement.placedOnLoop && group.some((p) => p.result && !p.commitOnly)) this.walSync.writeback();
    unfolded?.unfoldedSettled?.(true);
    if (folded) this.settleFold(folded, true);
    this.checkpointer?.poke();
    if (this.committed) {
      this.committed.head = head;
      const known = this.committed.revisions;
      // Bounded: streams are many (one per workflow run); a forgotten one is read back once.
      if (known.size + revisions.size > MAX_KNOWN_REVISIONS) known.clear();
      for (const [stream, revision] of revisions) known.set(stream, revision);
    }
    // Failed appends and those that asked for their commit only are answered now; in durable
    // mode the others wait for the next fsync of the WAL.
    const durable: PendingAppend[] = [];
    let unsynced = false;
    for (const pending of group) {
      if (!pending.result) pending.reject(pending.error);
      else if (this.walFd === undefined) pending.resolve(pending.result);
      else if (pending.commitOnly) {
        pending.resolve(pending.result);
        unsynced = true;
      } else durable.push(pending);
    }
    // Subscribers hear of a commit at once, before its fsync (see "Durability" in docs/architecture.md).
    if (head !== startHead) this.notifyAppended(BigInt(head));
    if (durable.length > 0) this.afterCommit(durable);
    else if (unsynced) this.syncSoon();
    else if (this.writebackFd !== undefined && head !== startHead) this.writebackSoon();
  }

  /**
   * `synchronous: 'normal'`: an fdatasync of the WAL on the libuv pool within
   * {@link COMMIT_ONLY_SYNC_MS} of a commit, which nobody waits for. Without it the WAL was synced
   * only by SQLite's checkpoint, on the event loop, with everything written since the last one
   * still to go to the disk: 5-7 ms every 0.35 s at 1,000 events/s, and p99 from request to
   * receipt 9.8-11.7 ms against 6.8-7.0 with it (8.6 and 4.7 against 2.6 ms at 200/s; one probe
   * of two rounds each, CPU per event the same within the noise). It also bounds what a power loss
   * takes in that mode to about that much, where nothing did, though no caller waits for it.
   */
  private writebackSoon(): void {
    if (this.closed || this.writebackTimer) return;
    // A commit during a sync in progress is covered by the next one, started once that one ends.
    if (this.writebackInFlight) {
      this.writebackAgain = true;
      return;
    }
    this.writebackTimer = setTimeout(() => {
      this.writebackTimer = undefined;
      if (this.closed) return;
      this.writebackInFlight = true;
      this.writebackCount++;
      fdatasync(this.writebackFd!, () => {
        this.writebackInFlight = false;
        for (const w of this.writebackWaiters.splice(0)) w();
        if (this.writebackAgain) {
          this.writebackAgain = false;
          this.writebackSoon();
        }
      });
    }, COMMIT_ONLY_SYNC_MS);
    this.writebackTimer.unref();
  }
  /** Background fdatasyncs of the WAL started so far in `normal` mode (see `writebackSoon`). */
  writebackCount = 0;
  private writebackFd?: number;
  private writebackTimer?: NodeJS.Timeout;
  private writebackInFlight = false;
  /** A commit came while a sync was in progress: another follows it. */
  private writebackAgain = false;
  private readonly writebackWaiters: (() => void)[] = [];

  /**
   * Begins the group's transaction and writes its appends (each gets a result or an error), or
   * fails the whole group and returns undefined when the transaction cannot go on.
   */
  private writeGroup(group: PendingAppend[]): { head: number; startHead: number; revisions: Map<string, number> } | undefined {
    let head: number;
    try {
      this.beginStmt.run();
      head = this.committed?.head ?? this.currentHead();
    } catch (error) {
      this.abort(group, error);
      return undefined;
    }
    const startHead = head;
    /** Last revision per stream written by this group (committed with it, or not at all). */
    const revisions = new Map<string, number>();
    for (const pending of group) {
      pending.result = undefined;
      pending.error = undefined;
      pending.written = undefined;
      let outcome: WriteOutcome | { error: unknown };
      // An append of up to MAX_ROWS_PER_INSERT events is one INSERT, which SQLite undoes by itself
      // when it fails (the revision check before it writes nothing): only longer appends need a
      // savepoint.
      const savepoint = pending.events.length > MAX_ROWS_PER_INSERT;
      try {
        if (savepoint) this.savepointStmt.run();
        outcome = this.write(pending, head, revisions);
        if ('result' in outcome && savepoint) this.releaseStmt.run();
      } catch (error) {
        outcome = { error };
      }
      if ('result' in outcome) {
        pending.result = outcome.result;
        pending.written = outcome.written === true;
        head = Math.max(head, Number(outcome.result.position));
        if (outcome.written) revisions.set(pending.stream, Number(outcome.result.nextExpectedRevision));
        continue;
      }
      // Undo whatever this append inserted; the rest of the group is unaffected.
      if (savepoint ? !this.rollbackToSavepoint() : !this.db.inTransaction) {
        this.abort(group, 'error' in outcome ? outcome.error : new Error('rollback to savepoint failed'));
        return undefined;
      }
      if ('collidedId' in outcome) {
        pending.result = this.findRetriedAppend(pending);
        if (!pending.result) pending.error = new DuplicateEventIdError(pending.stream, outcome.collidedId);
      } else if (outcome.error instanceof WrongExpectedRevisionError) {
        pending.error = outcome.error;
      } else {
        const message = `append to ${pending.stream} failed: ${messageOf(outcome.error)}`;
        pending.error = new StoreUnavailableError(message, { cause: outcome.error });
      }
    }
    return { head, startHead, revisions };
  }

  /**
   * Runs the inline fold on what this group wrote, inside its transaction, when the fold is
   * caught up to `startHead`. Returns the folded events, undefined when there was nothing to fold
   * (no fold, not caught up), or null when the fold threw: the whole transaction is rolled back
   * then, the group's appends with it, and the caller writes them again.
   */
  private foldInline(group: PendingAppend[], startHead: number): StoredEvent[] | undefined | null {
    const fold = this.inlineFold;
    if (!fold || fold.position() !== BigInt(startHead)) return undefined;
    const events: StoredEvent[] = [];
    for (const pending of group) {
      if (!pending.written || !pending.result) continue;
      const n = pending.events.length;
      const firstPosition = Number(pending.result.position) - n + 1;
      const firstRevision = Number(pending.result.nextExpectedRevision) - n + 1;
      for (let i = 0; i < n; i++) {
        const e = pending.events[i];
        // Parsed only if the fold reads them, or read from what they were serialised from (see LazyLogEvent).
        events.push(new LazyStoredEvent(e.id, pending.stream, BigInt(firstRevision + i), e.type, BigInt(firstPosition + i), e.data, e.metadata, e.givenData, e.givenMetadata));
      }
    }
    if (events.length === 0) return undefined;
    // Positions are handed out in queue order, so `events` is in position order.
    try {
      fold.apply(events);
      return events;
    } catch {
      // No savepoint to undo the fold alone (it cost two statements and a copy of every page the
      // fold changed, in every commit, for a throw that is rare): the whole transaction goes, and
      // the caller writes the group again without the fold.
      if (this.db.inTransaction) {
        try {
          this.rollbackStmt.run();
        } catch {
          // SQLite ended the transaction itself; there is nothing left to undo.
        }
      }
      this.settleFold(events, false);
      return null;
    }
  }

  private settleFold(events: StoredEvent[], committed: boolean): void {
    try {
      this.inlineFold?.settled(events, committed);
    } catch (error) {
      // What follows a fold (side effects) must not fail the appends that committed.
      console.error('event store: the inline fold failed after its transaction', error);
    }
  }

  /**
   * Durable mode: acknowledges a group's appends only after an fsync of the WAL that started
   * after its commit. One fsync runs at a time; groups committed meanwhile share the next one, so
   * the number of fsyncs adapts to the load and acknowledgements stay in commit order.
   */
  private afterCommit(durable: PendingAppend[]): void {
    this.awaitingSync.push(durable);
    if (!this.syncing) this.startSync();
  }

  /**
   * Commits acknowledged without an fsync are fsynced within {@link COMMIT_ONLY_SYNC_MS} when no
   * durable append does it first (every fsync covers every commit before it), so a power loss
   * takes at most that much of them.
   */
  private syncSoon(): void {
    this.unsyncedCommits = true;
    if (this.lazySyncArmed || this.syncing || this.closed) return;
    this.lazySyncArmed = true;
    this.lazySync.start(COMMIT_ONLY_SYNC_MS);
  }

  /**
   * The timer of {@link syncSoon}, stopped by any fsync that starts before it fires (that fsync
   * covers the commits it waited for). A `loopTimer`: a cleared `setTimeout` still woke the loop at
   * its time, and before it could be stopped it fired anyway, to find nothing left to sync (at 10
   * events a second about one wake-up in ten events, each delivery outcome's commit arming it).
   * It does not keep the process alive.
   */
  private readonly lazySync = loopTimer(() => {
    this.lazySyncArmed = false;
    if (this.unsyncedCommits && !this.syncing && !this.closed) this.startSync();
  }, true, false);
  private lazySyncArmed = false;

  private startSync(): void {
    if (this.lazySyncArmed) {
      this.lazySync.stop();
      this.lazySyncArmed = false;
    }
    this.syncing = true;
    // fdatasync: the WAL's frames and its size, not its timestamps. Recovery reads nothing else
    // (the frames carry their checksums), and SQLite syncs its own WAL the same way on Linux.
    // fsync also wrote the inode whenever the mtime had moved on (about 0.4 times per sync at
    // 1,000 events/s): fdatasync costs about 4% less CPU per event (alternated A/B, 4 rounds).
    if (!this.fsyncPlacement.next()) {
      const batch = this.takeAwaitingSync();
      if (this.walSync) this.walSync.syncAsync((err) => this.synced(batch, err));
      else fdatasync(this.walFd!, (err) => this.synced(batch, err));
      return;
    }
    // On the loop, from the next turn's check phase rather than inside this commit: what this turn
    // has still to send leaves first (a run's invocation, which the sandbox supervisor writes to
    // its worker from an immediate queued after the flush's), so the worker runs while the disk
    // syncs, where it used to start only after the fsync (a custom response's round trip: request,
    // commit, fsync, then the run). The fsync covers every group committed until it starts. The
    // commit's own side effects (the fold's, subscribers') have run; what the appends' callers do
    // next waits for the disk, as with the pool's fsync.
    // With `walSync: 'ring'` the sync is started now on io_uring where it can be: the disk writes the pages
    // and flushes its cache while the loop goes on (the invocation's write, the worker's run, its
    // result), and the immediate below waits for what is left of it, often nothing. It covers
    // what was committed until now: later commits wait for the next sync.
    const early = this.walSyncRing && this.walSync!.start() ? this.takeAwaitingSync() : undefined;
    setImmediate(() => {
      const batch = early ?? this.takeAwaitingSync();
      let error: NodeJS.ErrnoException | null = null;
      const started = performance.now();
      try {
        if (early) this.walSync!.finish();
        else if (this.walSync) this.walSync.sync();
        else fdatasyncSync(this.walFd!);
      } catch (err) {
        error = err as NodeJS.ErrnoException;
      }
      this.fsyncPlacement.tookOnLoop(performance.now() - started);
      this.fsyncsOnLoop++;
      this.synced(batch, error);
    });
  }

  /** The groups an fsync starting now covers: every one committed so far. */
  private takeAwaitingSync(): PendingAppend[][] {
    const batch = this.awaitingSync;
    this.awaitingSync = [];
    this.unsyncedCommits = false;
    this.fsyncCount++;
    return batch;
  }

  /** An fsync ended: its appends are answered, and the next one starts if commits wait for it. */
  private synced(batch: PendingAppend[][], err: NodeJS.ErrnoException | null): void {
    this.syncing = false;
    for (const group of batch) {
      for (const pending of group) {
        if (err) pending.reject(new StoreUnavailableError(`fsync of the log failed: ${messageOf(err)}`, { cause: err }));
        else pending.resolve(pending.result!);
      }
    }
    // Appends that waited for this fsync to end (afterSyncInProgress) commit now, after the
    // promises just resolved have had their turn (scheduleFlush is a setImmediate).
    if (this.flushAfterSync) {
      this.flushAfterSync = false;
      if (this.queue.length > 0) this.scheduleFlush();
    }
    if (this.awaitingSync.length > 0) this.startSync();
    else {
      if (this.unsyncedCommits) this.syncSoon();
      for (const w of this.syncIdleWaiters.splice(0)) w();
    }
  }

  /** True when appends are acknowledged only after an fsync of the WAL ('full'). */
  get fsyncsLog(): boolean {
    return this.walFd !== undefined;
  }

  /** Number of WAL fsyncs made so far (each covers every group committed before it started). */
  fsyncCount = 0;
  /** How many of them ran on the event loop ({@link SqliteEventStoreOptions.fsyncPlacement}). */
  fsyncsOnLoop = 0;
  private readonly fsyncPlacement: FsyncPlacement;

  private walFd?: number;
  /** The light sync of the WAL ({@link SqliteEventStoreOptions.walSync}), where it is durable. */
  private readonly walSync?: WalSync;
  /** `walSync: 'ring'` with a light sync: the loop's syncs are offered to `start` (the default asks nothing per sync). */
  private readonly walSyncRing: boolean = false;
  /** Why the WAL is synced with `fdatasync` alone, when it is (synchronous 'full'). */
  walSyncFallback?: string;

  /**
   * The WAL's syncs so far by kind: light (its pages and the disk's flush) and full (`fdatasync`),
   * and of either kind those started at their commit on io_uring (`started`).
   */
  walSyncCounts(): { light: number; full: number; started: number } {
    return this.walSync?.counts() ?? { light: 0, full: this.fsyncCount, started: 0 };
  }

  /** Why the WAL's syncs are not started on io_uring (`not asked for` unless `walSync: 'ring'`, an errno's name, `no light sync`), or undefined. */
  get walSyncRingUnavailable(): string | undefined {
    return this.walSync ? (this.walSync.ringUnavailable() ?? undefined) : 'no light sync';
  }
  /** The background checkpoint thread (`backgroundCheckpointMs`), if any. */
  readonly checkpointer?: WalCheckpointer;
  private syncing = false;
  /** An append waits for the fsync in progress to end before it is flushed (`afterSyncInProgress`). */
  private flushAfterSync = false;
  private awaitingSync: PendingAppend[][] = [];
  /** Commits were acknowledged without an fsync since the last one started. */
  private unsyncedCommits = false;
  private readonly syncIdleWaiters: (() => void)[] = [];

  /**
   * Checks and inserts one append; `head` is the last position written so far, `revisions` the
   * last revisions of the streams this group wrote so far.
   */
  private write(pending: PendingAppend, head: number, revisions: ReadonlyMap<string, number>): WriteOutcome {
    const actual = revisions.get(pending.stream) ?? this.committed?.revisions.get(pending.stream) ?? this.currentRevision(pending.stream);
    if (!satisfiesExpectedRevision(pending.expected, actual)) {
      const original = this.findRetriedAppend(pending);
      if (original) return { result: original };
      throw new WrongExpectedRevisionError(pending.stream, pending.expected, BigInt(actual));
    }
    const events = pending.events;
    for (let from = 0; from < events.length; from += MAX_ROWS_PER_INSERT) {
      const to = Math.min(events.length, from + MAX_ROWS_PER_INSERT);
      try {
        if (to - from === 1) {
          const e = events[from];
          this.insertStmt(head + from + 1, e.id, pending.stream, actual + from + 1, e.type, e.data, e.metadata);
        } else {
          const params = new Array<string | number>((to - from) * 7);
          for (let i = from, p = 0; i < to; i++) {
            const e = events[i];
            params[p++] = head + i + 1;
            params[p++] = e.id;
            params[p++] = pending.stream;
            params[p++] = actual + i + 1;
            params[p++] = e.type;
            params[p++] = e.data;
            params[p++] = e.metadata;
          }
          this.insertRowsStmt(to - from)(...params);
        }
      } catch (error) {
        // Rows of the earlier statements of this append are still there (the savepoint undoes them).
        if (isUniqueViolation(error)) return { collidedId: this.collidedId(events.slice(from, to)) };
        throw error;
      }
    }
    return { result: { nextExpectedRevision: BigInt(actual + events.length), position: BigInt(head + events.length) }, written: true };
  }

  /** INSERT statements of n rows (2 to MAX_ROWS_PER_INSERT), prepared when first needed. */
  private readonly insertRowsStmts = new Map<number, WriteStatement>();

  private insertRowsStmt(n: number): WriteStatement {
    let stmt = this.insertRowsStmts.get(n);
    if (!stmt) {
      stmt = this.writes.prepare(`INSERT INTO events (${COLUMNS}) VALUES ${Array.from({ length: n }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`);
      this.insertRowsStmts.set(n, stmt);
    }
    return stmt;
  }

  /** The id that made an INSERT of `events` fail: the first stored already, else the first repeated among them. */
  private collidedId(events: readonly SerializedEvent[]): string {
    for (const e of events) if (this.byIdStmt.get(e.id)) return e.id;
    const seen = new Set<string>();
    for (const e of events) {
      if (seen.has(e.id)) return e.id;
      seen.add(e.id);
    }
    return events[0].id;
  }

  /** The original result when all of the append's ids are stored, in order, where it would have put them. */
  private findRetriedAppend(pending: PendingAppend): AppendResult | undefined {
    let first = -1;
    let last: { revision: number; position: number } | undefined;
    for (let i = 0; i < pending.events.length; i++) {
      const row = this.byIdStmt.get(pending.events[i].id);
      if (!row || row.stream !== pending.stream) return undefined;
      if (i === 0) first = row.revision;
      else if (row.revision !== first + i) return undefined;
      last = row;
    }
    if (!last || !retryMatchesExpected(pending.expected, first)) return undefined;
    return { nextExpectedRevision: BigInt(last.revision), position: BigInt(last.position) };
  }

  private rollbackToSavepoint(): boolean {
    if (!this.db.inTransaction) return false;
    try {
      this.rollbackToStmt.run();
      this.releaseStmt.run();
      return true;
    } catch {
      // SQLite rolled back the whole transaction itself (I/O error, disk full): the caller
      // fails the group with the original error.
      return false;
    }
  }

  /** Fails a whole group whose transaction could not begin or commit. */
  private abort(group: PendingAppend[], error: unknown): void {
    if (this.db.inTransaction) {
      try {
        this.rollbackStmt.run();
      } catch {
        // The rollback failing leaves nothing more to undo than the error already reported.
      }
    }
    this.failAll(group, new StoreUnavailableError(`the event store cannot take writes: ${messageOf(error)}`, { cause: error }));
  }

  private failAll(group: PendingAppend[], error: unknown): void {
    for (const pending of group) pending.reject(error);
  }

  private takeQueue(): PendingAppend[] {
    const group = this.queue;
    this.queue = [];
    return group;
  }

  private notifyAppended(head: bigint): void {
    for (const listener of this.appendedListeners) {
      try {
        listener(head);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  private currentHead(): number {
    return this.headStmt.get() ?? 0;
  }

  private currentRevision(stream: string): number {
    return this.streamRevisionStmt.get(stream) ?? -1;
  }

  /**
   * `readAll` without the promise, for a caller that reads inside its own transaction on this
   * connection (a read-model rebuild): events strictly after `after`, at most `maxCount`.
   */
  readAllSync(after: bigint, maxCount: number): StoredEvent[] {
    return storedEventsFromRows(this.readAllStmt.all(after, maxCount));
  }

  /**
   * {@link readAllSync} with only what a fold of the whole log reads ({@link LogEvent}): no id,
   * stream or revision, three strings fewer to make per event (a read-model rebuild); data and
   * metadata are parsed when the fold first reads them ({@link LazyLogEvent}).
   */
  readLogSync(after: bigint, maxCount: number): LogEvent[] {
    const rows = this.readLogStmt.all(after, maxCount);
    const events = new Array<LogEvent>(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      events[i] = new LazyLogEvent(row[1], BigInt(row[0]), row[2], row[3]);
    }
    return events;
  }
}

/** Stored events of raw `events` rows (column order of {@link EventRow}), their JSON parsed. */
export function storedEventsFromRows(rows: EventRow[]): StoredEvent[] {
  const events = new Array<StoredEvent>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    events[i] = {
      id: row[1],
      type: row[4],
      streamName: row[2],
      revision: BigInt(row[3]),
      position: BigInt(row[0]),
      data: JSON.parse(row[5]),
      metadata: JSON.parse(row[6]),
    };
  }
  return events;
}

/** SQLite's LIMIT for an optional maxCount: -1 means no limit. */
function limitOf(maxCount: number | undefined): number {
  if (maxCount === undefined) return -1;
  if (!Number.isInteger(maxCount) || maxCount < 0) {
    throw new RangeError(`maxCount must be a non-negative integer, got ${maxCount}`);
  }
  return maxCount;
}

/** At most this long between a commit acknowledged without an fsync and the fsync that covers it (ms). */
export const COMMIT_ONLY_SYNC_MS = 200;

/**
 * Events an append writes with one INSERT: a statement is undone whole when it fails, so an
 * append needs no savepoint of its own (two statements) and pays one statement's overhead instead
 * of one per event. 64 rows are 448 parameters, far below SQLite's limit.
 */
const MAX_ROWS_PER_INSERT = 64;

/** Streams whose last revision an exclusive (or sole-writer) store keeps in memory (see `committed`). */
const MAX_KNOWN_REVISIONS = 50_000;

function isUniqueViolation(error: unknown): boolean {
  // By code, not `instanceof`: the native addon keeps the SqliteError class (and so the Error) of
  // the first module instance and realm that loaded it, so in another one (jest's per-file
  // contexts, two copies of the package) neither class would match.
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'SQLITE_CONSTRAINT_UNIQUE';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** SQLite's page sizes: a power of two from 512 to 65,536 bytes (SQLite ignores any other silently). */
function checkedPageSize(bytes: number): number {
  if (!Number.isInteger(bytes) || bytes < 512 || bytes > 65_536 || (bytes & (bytes - 1)) !== 0) {
    throw new RangeError(`pageSize must be a power of two from 512 to 65536, got ${String(bytes)}`);
  }
  return bytes;
}
