import { type MessagePort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

/** What {@link LogPrefetch} hands the worker. */
interface PrefetchData {
  file: string;
  after: number;
  page: number;
  ahead: number;
  port: MessagePort;
  /** [0]: pages posted (the worker counts), [1]: pages taken (the reader counts). */
  control: SharedArrayBuffer;
}

// Reads `events` in position order from its own read-only connection, one raw page (rows in
// column order) per message, at most `ahead` pages ahead of the reader, then an empty page.
const { file, after, page, ahead, port, control } = workerData as PrefetchData;
const counts = new Int32Array(control);
let db: Database.Database | undefined;
try {
  db = new Database(file, { readonly: true, fileMustExist: true });
  const read = db.prepare('SELECT position, id, stream, revision, type, data, metadata FROM events WHERE position > ? ORDER BY position LIMIT ?').raw();
  let last = after;
  for (;;) {
    for (let taken = Atomics.load(counts, 1); Atomics.load(counts, 0) - taken >= ahead; taken = Atomics.load(counts, 1)) {
      Atomics.wait(counts, 1, taken, 1000);
    }
    const rows = read.all(last, page) as unknown[][];
    port.postMessage(rows);
    Atomics.add(counts, 0, 1);
    Atomics.notify(counts, 0);
    if (rows.length === 0) break;
    last = rows[rows.length - 1][0] as number;
  }
} catch (err) {
  port.postMessage({ error: err instanceof Error ? err.message : String(err) });
  Atomics.add(counts, 0, 1);
  Atomics.notify(counts, 0);
} finally {
  db?.close();
  port.close();
}
