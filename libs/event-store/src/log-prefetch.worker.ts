import { type MessagePort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { READ_LOG_SQL, type LogRow } from './log-read.sql';

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

// Reads `events` in position order from its own read-only connection, one page per message (a
// JSON array of [position, type, data, metadata] rows), at most `ahead` pages ahead of the reader, then `[]`;
// a failure is posted as `{ error }`.
const { file, after, page, ahead, port, control } = workerData as PrefetchData;
const counts = new Int32Array(control);
let db: Database.Database | undefined;
try {
  db = new Database(file, { readonly: true, fileMustExist: true });
  const read = db.prepare(READ_LOG_SQL).raw();
  let last = after;
  for (;;) {
    for (let taken = Atomics.load(counts, 1); Atomics.load(counts, 0) - taken >= ahead; taken = Atomics.load(counts, 1)) {
      Atomics.wait(counts, 1, taken, 1000);
    }
    const rows = read.all(last, page) as LogRow[];
    // One JSON text per page, the stored data and metadata embedded as they are (they are JSON
    // already): the reader's one JSON.parse parses them anyway, and a single string crosses
    // threads as a plain copy, where an array of strings costs as much to clone as to parse.
    let text = '[';
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      text += `${i === 0 ? '' : ','}[${r[0]},${JSON.stringify(r[1])},${r[2]},${r[3]}]`;
    }
    port.postMessage(`${text}]`);
    Atomics.add(counts, 0, 1);
    Atomics.notify(counts, 0);
    if (rows.length === 0) break;
    last = rows[rows.length - 1][0];
  }
} catch (err) {
  port.postMessage({ error: err instanceof Error ? err.message : String(err) });
  Atomics.add(counts, 0, 1);
  Atomics.notify(counts, 0);
} finally {
  db?.close();
  port.close();
}
