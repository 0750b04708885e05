import { closeSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { Worker } from 'node:worker_threads';

const LITTLE_ENDIAN = endianness() === 'LE';

/**
 * The worker thread's code, evaluated as a string so it runs the same from TypeScript sources
 * (jest) and from `dist/`: its own connection to the store's file, one PASSIVE checkpoint per
 * message. PASSIVE copies what it can without waiting for the writer and never blocks it; SQLite
 * makes a checkpoint by any connection safe against crashes at any point. Whether a checkpoint is
 * worth making is decided before, on the writer's thread (`WalCheckpointer.pendingFrames`).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.sqlite);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 0');
db.pragma('synchronous = ' + workerData.synchronous);
parentPort.on('message', (m) => {
  if (m === 'close') {
    db.close();
    process.exit(0);
  }
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ busy: r.busy, log: r.log, checkpointed: r.checkpointed });
  } catch (e) {
    parentPort.postMessage({ error: String((e && e.message) || e) });
  }
});
`;

/**
 * How long the checkpoint thread stays without a poke (no commits) before it is stopped (ms): the
 * thread and its connection are about 6 MB of the server's RSS, which an idle server gives back.
 */
export const WAL_CHECKPOINTER_IDLE_MS = 10_000;

/** What one background checkpoint found: the WAL's frames, and how many of them are in the database file now. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/**
 * Copies a SQLite store's WAL back into its file on a worker thread (`SLUICE_SQLITE_CHECKPOINT=
 * background`, the default), so the copy and the database file's fsync leave the event loop. The
 * writer pokes it after its commits; it looks at most every `everyMs`, never runs two at once,
 * and copies only once `minFrames` frames wait to be copied (read from the WAL index): each
 * checkpoint syncs the WAL and the file, and copies the hot pages (the log's last leaves, the read
 * models' latest rows) once more, so a checkpoint per look would cost more, the slower the load,
 * for nothing (at 10 events/s, four checkpoints a second of a few pages each). The writer's own
 * automatic checkpoint stays as the bound of the WAL's size: it finds the frames already copied
 * and has little left to do. The WAL index is read on the writer's thread, so a look that copies
 * nothing wakes no other thread. The thread starts at the first look that copies and stops once no
 * poke came for {@link WAL_CHECKPOINTER_IDLE_MS}. Needs a store in `normal` locking (another
 * connection must reach the WAL index).
 */
export class WalCheckpointer {
  /** The thread, started at the first poke and stopped after {@link WAL_CHECKPOINTER_IDLE_MS} without one. */
  private worker?: Worker;
  /** Settles when the thread started last has exited. */
  private exited: Promise<void> = Promise.resolve();
  /** Settles when the look in progress ends (undefined while none runs). */
  private running?: { done: Promise<void>; end: () => void };
  private lastStart = -Infinity;
  /** When the writer last poked (`Date.now()`), and the timer that stops an idle thread. */
  private lastPoke = -Infinity;
  private idleTimer?: NodeJS.Timeout;
  private closed = false;
  /** Checkpoints finished so far. */
  count = 0;
  /** Looks that found fewer than `minFrames` frames to copy, and copied nothing. */
  skipped = 0;
  /** Threads started so far (one per stretch of commits with no idle gap of {@link WAL_CHECKPOINTER_IDLE_MS}). */
  started = 0;
  /** The last checkpoint's figures (or its error). */
  last?: CheckpointResult | { error: string };
  /** Why the thread stopped working, if it did (the store's own checkpoints go on regardless). */
  failure?: string;

  constructor(
    private readonly file: string,
    private readonly synchronous: 'FULL' | 'NORMAL',
    private readonly everyMs: number,
    private readonly minFrames = 0,
    private readonly idleMs = WAL_CHECKPOINTER_IDLE_MS,
  ) {}

  /** Whether the thread is running now. */
  get threadRunning(): boolean {
    return this.worker !== undefined;
  }

  /**
   * Looks at the WAL unless a look is running, the last started less than `everyMs` ago, or the
   * thread failed; copies it into the file if `minFrames` frames (or more) wait, or if the WAL
   * index cannot be read. `force`: copy whatever waits. A look that copies starts the thread if it is not running.
   */
  poke(now = Date.now(), force = false): void {
    this.lastPoke = now;
    if (this.running || this.closed || this.failure !== undefined || now - this.lastStart < this.everyMs) return;
    this.lastStart = now;
    // Looked at here, not on the thread: a look that finds too little to copy (nearly all of them
    // at everyday rates) is one read of the WAL index, where asking the thread woke it and then
    // this loop with its answer, about four times a second (issue 10).
    if (!force && this.minFrames > 0) {
      const frames = this.pendingFrames();
      if (frames !== null && frames < this.minFrames) {
        this.skipped++;
        return;
      }
    }
    let end!: () => void;
    const done = new Promise<void>((resolve) => (end = resolve));
    this.running = { done, end };
    const look = 'checkpoint';
    if (this.worker) {
      this.worker.postMessage(look);
      return;
    }
    // Starting a thread takes the loop a millisecond or more: not inside the commit that poked
    // (its appends are answered first), but in a turn of its own.
    setImmediate(() => {
      if (this.closed) this.ended();
      else (this.worker ?? this.start()).postMessage(look);
    });
  }

  /**
   * Frames of the WAL not yet copied into the file, from the WAL index (the `-shm` file): its two
   * copies of the header (48 bytes each: mxFrame, the frames in the WAL, at 16), then nBackfill,
   * the frames already copied, at 96; in the machine's byte order (sqlite.org/walformat.html).
   * Null when it cannot be read, or is being rewritten (its two copies differ), or not set up.
   */
  private pendingFrames(): number | null {
    const header = this.header;
    try {
      if (this.shm === undefined) this.shm = openSync(`${this.file}-shm`, 'r');
      if (readSync(this.shm, header, 0, header.length, 0) < header.length) return null;
    } catch {
      return null;
    }
    const u32 = (at: number) => (LITTLE_ENDIAN ? header.readUInt32LE(at) : header.readUInt32BE(at));
    if (u32(0) !== 3007000 || header[12] !== 1) return null;
    if (!header.subarray(0, 48).equals(header.subarray(48, 96))) return null;
    const frames = u32(16) - u32(96);
    return frames >= 0 ? frames : null;
  }
  private shm?: number;
  private readonly header = Buffer.alloc(136);

  /** Resolves once no look is running (for tests and close). */
  async idle(): Promise<void> {
    await this.running?.done;
  }

  private start(): Worker {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file: this.file, synchronous: this.synchronous, sqlite: require.resolve('better-sqlite3') } });
    // It must not keep the process alive (the store may be dropped without close()).
    worker.unref();
    this.worker = worker;
    this.started++;
    this.exited = new Promise((resolve) => worker.once('exit', () => {
      // A thread that ends on its own (not stopped) leaves no look waiting, and the next poke starts another.
      if (this.worker === worker) {
        this.worker = undefined;
        this.ended();
      }
      resolve();
    }));
    worker.on('message', (m: CheckpointResult | { error: string }) => {
      this.count++;
      this.last = m;
      this.ended();
    });
    worker.on('error', (error) => {
      // A thread already stopped (idle) is not the one in use.
      if (this.worker !== worker) return;
      this.failure = error.message;
      this.ended();
      console.error(`event store: the background checkpoint thread failed (${error.message}); the writer's own checkpoints go on`);
    });
    this.armIdleStop(this.idleMs);
    return worker;
  }

  /** One timer while the thread runs: it stops the thread once no poke came for `idleMs` (its memory is the server's idle RSS). */
  private armIdleStop(ms: number): void {
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (!this.worker || this.closed) return;
      const quiet = Date.now() - this.lastPoke;
      if (quiet < this.idleMs || this.running) {
        this.armIdleStop(Math.max(1, this.idleMs - quiet));
        return;
      }
      this.stopThread();
    }, ms);
    this.idleTimer.unref();
  }

  private stopThread(): void {
    const worker = this.worker;
    this.worker = undefined;
    worker?.postMessage('close');
  }

  private ended(): void {
    const running = this.running;
    this.running = undefined;
    running?.end();
  }

  /** Lets a running checkpoint finish, then closes the thread's connection and ends it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    await this.idle();
    const worker = this.worker;
    this.stopThread();
    const killer = worker ? setTimeout(() => void worker.terminate(), 5000) : undefined;
    await this.exited;
    if (killer) clearTimeout(killer);
  }

  /**
   * Closes this side's descriptor of the WAL index; call it once the store's own connection is
   * closed. Closing any descriptor of a file drops every POSIX lock the process holds on it, and
   * SQLite's connection holds one on the WAL index for as long as it is open (the lock that tells
   * other processes it is in use): closed before, another process could take the index for unused.
   */
  closeIndexFile(): void {
    if (this.shm !== undefined) closeSync(this.shm);
    this.shm = undefined;
  }
}

