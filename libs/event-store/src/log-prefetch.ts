import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { LogEvent } from './event-store.port';

/** The compiled worker (absent when running from TypeScript sources, e.g. under jest). */
const WORKER_FILE = join(__dirname, 'log-prefetch.worker.js');

/**
 * Reads a SQLite store's log ahead on a worker thread with its own read-only connection, so the
 * reading (SQLite's steps and the row strings) runs on another core while the caller folds the
 * previous page; the caller parses one JSON text per page. Events come as {@link LogEvent}s (what a
 * fold reads: no id, stream or revision). `read` is synchronous (it blocks
 * until the worker's next page arrives), so a caller can read inside its own transaction. Reads
 * go forward only, from the position given to {@link LogPrefetch.open}: `read(after)` must ask
 * for what follows the last event it returned. Meant for a log nobody appends to meanwhile (a
 * rebuild holds the data dir). Call `close()` when done, also after an error.
 */
export class LogPrefetch {
  private readonly counts: Int32Array;
  private taken = 0;
  private buffered: LogEvent[] = [];
  private last: bigint;
  private finished = false;

  private constructor(private readonly worker: Worker, private readonly port: MessagePort, control: SharedArrayBuffer, after: bigint) {
    this.counts = new Int32Array(control);
    this.last = after;
  }

  /**
   * Starts the worker on `file` reading after `after`, `page` events per message and at most
   * `ahead` messages ahead; `undefined` when the compiled worker is not there (TypeScript
   * sources): read on the caller's connection instead.
   */
  static open(file: string, after = 0n, page = 1_000, ahead = 8): LogPrefetch | undefined {
    if (!existsSync(WORKER_FILE)) return undefined;
    const control = new SharedArrayBuffer(8);
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(WORKER_FILE, {
      workerData: { file, after: Number(after), page, ahead, port: port2, control },
      transferList: [port2],
    });
    // Its failures arrive as messages; an exit before the last page is reported by `read`.
    worker.on('error', () => undefined);
    return new LogPrefetch(worker, port1, control, after);
  }

  /** Events strictly after `after` (the last position returned), at most `maxCount`; empty at the end of the log. */
  read(after: bigint, maxCount: number): LogEvent[] {
    if (after !== this.last) throw new Error(`log prefetch reads forward only: asked after ${after}, at ${this.last}`);
    if (this.buffered.length === 0 && !this.finished) this.buffered = this.next();
    const out = this.buffered.length <= maxCount ? this.buffered : this.buffered.slice(0, maxCount);
    this.buffered = out === this.buffered ? [] : this.buffered.slice(maxCount);
    if (out.length > 0) this.last = out[out.length - 1].position;
    return out;
  }

  /** Stops the worker (it may be blocked waiting for the reader). */
  async close(): Promise<void> {
    this.port.close();
    await this.worker.terminate();
  }

  private next(): LogEvent[] {
    for (;;) {
      const got = receiveMessageOnPort(this.port);
      if (got) {
        this.taken++;
        Atomics.store(this.counts, 1, this.taken);
        Atomics.notify(this.counts, 1);
        const message = got.message as string | { error: string };
        if (typeof message !== 'string') throw new Error(`log prefetch failed: ${message.error}`);
        const rows = JSON.parse(message) as [number, string, unknown, LogEvent['metadata']][];
        if (rows.length === 0) this.finished = true;
        const events = new Array<LogEvent>(rows.length);
        for (let i = 0; i < rows.length; i++) {
          const r = rows[i];
          events[i] = { type: r[1], position: BigInt(r[0]), data: r[2], metadata: r[3] };
        }
        return events;
      }
      // Nothing posted beyond what was taken: wait for the worker's next page.
      if (Atomics.wait(this.counts, 0, this.taken, 30_000) === 'timed-out') throw new Error('log prefetch: no page from the worker in 30 s');
    }
  }
}
