import { Worker } from 'node:worker_threads';

/**
 * The worker thread's code, evaluated as a string so it runs the same from TypeScript sources
 * (jest) and from `dist/`: its own connection to the store's file, one PASSIVE checkpoint per
 * message. PASSIVE copies what it can without waiting for the writer and never blocks it; SQLite
 * makes a checkpoint by any connection safe against crashes at any point.
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

/** What one background checkpoint found: the WAL's frames, and how many of them are in the database file now. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/**
 * Copies a SQLite store's WAL back into its file on a worker thread (`SLUICE_SQLITE_CHECKPOINT=
 * background`), so the copy and the database file's fsync leave the event loop. The writer pokes
 * it after its commits; it starts a checkpoint at most every `everyMs` and never two at once. The
 * writer's own automatic checkpoint stays as the bound of the WAL's size: it finds the frames
 * already copied and has little left to do. Needs a store in `normal` locking (another connection
 * must reach the WAL index).
 */
export class WalCheckpointer {
  private readonly worker: Worker;
  /** Settles when the checkpoint in progress ends (undefined while none runs). */
  private running?: { done: Promise<void>; end: () => void };
  private lastStart = -Infinity;
  private closed = false;
  private exited: Promise<void>;
  /** Checkpoints finished so far. */
  count = 0;
  /** The last checkpoint's figures (or its error). */
  last?: CheckpointResult | { error: string };
  /** Why the thread stopped working, if it did (the store's own checkpoints go on regardless). */
  failure?: string;

  constructor(file: string, synchronous: 'FULL' | 'NORMAL', private readonly everyMs: number) {
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, synchronous, sqlite: require.resolve('better-sqlite3') } });
    // It must not keep the process alive (the store may be dropped without close()).
    this.worker.unref();
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.on('message', (m: CheckpointResult | { error: string }) => {
      this.count++;
      this.last = m;
      this.ended();
    });
    this.worker.on('error', (error) => {
      this.failure = error.message;
      this.ended();
      console.error(`event store: the background checkpoint thread failed (${error.message}); the writer's own checkpoints go on`);
    });
  }

  /** Starts a checkpoint unless one is running, the last started less than `everyMs` ago, or the thread is gone. */
  poke(now = Date.now()): void {
    if (this.running || this.closed || this.failure !== undefined || now - this.lastStart < this.everyMs) return;
    let end!: () => void;
    const done = new Promise<void>((resolve) => (end = resolve));
    this.running = { done, end };
    this.lastStart = now;
    this.worker.postMessage('checkpoint');
  }

  /** Resolves once no checkpoint is running (for tests and close). */
  async idle(): Promise<void> {
    await this.running?.done;
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
    await this.idle();
    this.worker.postMessage('close');
    const killer = setTimeout(() => void this.worker.terminate(), 5000);
    await this.exited;
    clearTimeout(killer);
  }
}
