import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { SqliteEventStore, uuidv7, type NewEvent } from '@app/event-store';
import { deliveryIdFor } from '@app/projections';
import { startBenchServer } from './bench-server';

const ROOT = resolve(__dirname, '..', '..');
const SOURCES = 10;
/** Requests per source per chunk: each chunk is one group commit of three batch appends. */
const CHUNK = 500;

/** The four events one request of the e2e pipeline leaves in the log (as a real run writes them). */
function requestEvents(sourceId: string, accountId: string, webhookId: string, endpointKey: string, n: number, at: number) {
  const requestId = uuidv7();
  const runId = uuidv7();
  const emitId = uuidv7();
  const body = { n, t: at };
  const bodyRaw = JSON.stringify(body);
  const received: NewEvent = {
    id: requestId,
    type: 'source.http_request_received.v1',
    data: {
      sourceId, requestId, method: 'POST', path: '/', url: `http://127.0.0.1:3000/e/${endpointKey}`, query: {},
      headers: { host: '127.0.0.1:3000', connection: 'keep-alive', 'content-type': 'application/json', 'content-length': String(bodyRaw.length) },
      bodyRaw, body,
    },
    metadata: { actor: 'http', at },
  };
  const cause = { causationId: requestId, actor: sourceId, at: at + 2 };
  const emitted: NewEvent = {
    id: emitId,
    type: 'source.event_emitted.v1',
    data: { sourceId, accountId, emitId, runId, summaryId: `${at}-${n}`, event: body, meta: {}, deliveryIds: 'ordered' },
    metadata: cause,
  };
  const completed: NewEvent = {
    id: runId,
    type: 'source.run_completed.v1',
    data: { sourceId, runId, trigger: 'http', requestId, ok: true, logs: [], emitted: 1, durationMs: 0.4 },
    metadata: cause,
  };
  const delivered: NewEvent = {
    id: uuidv7(),
    type: 'delivery.delivered.v1',
    data: { deliveryId: deliveryIdFor(emitId, webhookId, true), webhookId, attempt: 1, durationMs: 2, statusCode: 200 },
    metadata: { at: at + 5 },
  };
  return { received, emitted, completed, delivered };
}

/**
 * Rebuild of every read model from a log of about `BENCH_REBUILD_EVENTS` events (default
 * 1,000,000). A real server sets up 10 HTTP sources subscribed by one webhook; then the log is
 * filled with what the e2e pipeline writes per request (request received, emit, run completed,
 * delivery delivered: 4 events), written directly with the store's batch append (one group commit
 * per 500 requests per source), not through HTTP. Then `admin rebuild` (the CLI, a child process)
 * runs on the data dir and the bench prints its own timing and events/s, and checks that the
 * rebuilt deliveries read model holds every delivery as delivered. `BENCH_REBUILD_KEEP=1` keeps the
 * data dir (its path is printed) for profiling.
 */
export async function benchRebuild(log: (s: string) => void): Promise<void> {
  const target = Number(process.env.BENCH_REBUILD_EVENTS ?? 1_000_000);
  const server = await startBenchServer();
  try {
    const wh = await server.post('/v1/webhooks', { url: 'http://127.0.0.1:9/hook', name: 'rebuild', description: '' });
    const sources: { id: string; key: string }[] = [];
    for (let i = 0; i < SOURCES; i++) {
      const src = await server.post('/v1/sources', {
        component_code: `export default { name: "rebuild${i}", version: "1", props: { http: { type: "$.interface.http" } }, run(e) { this.$emit(e.body); } }`,
      });
      await server.post('/v1/subscriptions', { emitter_id: src.id, listener_id: wh.id });
      sources.push({ id: src.id as string, key: String(src.endpoint_url).split('/e/')[1] });
    }
    await server.kill();

    const file = join(server.dataDir, 'sluice.db');
    // Closed before the rebuild, which needs the database to itself.
    const reader = new Database(file, { readonly: true });
    const accountId = (reader.prepare(`SELECT json_extract(data, '$.accountId') AS a FROM events WHERE type = 'account.created.v1'`).get() as { a: string }).a;
    reader.close();
    const store = new SqliteEventStore({ file, synchronous: 'normal' });
    const requests = Math.ceil(target / 4);
    const t0 = performance.now();
    let n = 0;
    let at = Date.now() - requests;
    try {
      while (n < requests) {
        for (const src of sources) {
          if (n >= requests) break;
          const inbox: NewEvent[] = [];
          const stream: NewEvent[] = [];
          const deliveries: NewEvent[] = [];
          for (let i = 0; i < CHUNK && n < requests; i++, n++, at++) {
            const e = requestEvents(src.id, accountId, wh.id as string, src.key, n, at);
            inbox.push(e.received);
            stream.push(e.emitted, e.completed);
            deliveries.push(e.delivered);
          }
          // Issued in the same tick: the store commits the three in one group.
          await Promise.all([
            store.append(`inbox-${src.id}`, inbox, { expectedRevision: 'any' }),
            store.append(`source-${src.id}`, stream, { expectedRevision: 'any' }),
            store.append(`delivery-${wh.id}`, deliveries, { expectedRevision: 'any' }),
          ]);
        }
      }
    } finally {
      await store.close();
    }
    log(`  wrote ${(requests * 4).toLocaleString('en-US')} events (${requests.toLocaleString('en-US')} requests over ${SOURCES} sources, 4 events each) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    const w0 = performance.now();
    const { stdout } = await promisify(execFile)(process.execPath, ['--no-warnings=ExperimentalWarning', join(ROOT, 'dist/apps/cli/main.js'), 'rebuild'], {
      env: { ...process.env, SLUICE_DATA_DIR: server.dataDir }, maxBuffer: 1 << 20,
    });
    const wallS = (performance.now() - w0) / 1000;
    const answer = JSON.parse(stdout.trim().split('\n').pop()!) as { events: number; ms: number };
    const db = new Database(file, { readonly: true });
    let delivered: number;
    let pending: number;
    try {
      delivered = (db.prepare(`SELECT count(*) AS c FROM rm_deliveries WHERE status = 'delivered'`).get() as { c: number }).c;
      pending = (db.prepare('SELECT count(*) AS c FROM rm_pending_requests').get() as { c: number }).c;
    } finally {
      db.close();
    }
    log(`  admin rebuild: ${answer.events.toLocaleString('en-US')} events in ${(answer.ms / 1000).toFixed(1)} s = ${Math.round(answer.events / (answer.ms / 1000)).toLocaleString('en-US')} events/s ` +
      `(the command's own timing; ${wallS.toFixed(1)} s wall with process start)`);
    log(`  rebuilt read models: ${delivered.toLocaleString('en-US')} of ${requests.toLocaleString('en-US')} deliveries delivered, ${pending} requests pending ${delivered === requests && pending === 0 ? '(OK)' : '(WRONG)'}`);
  } finally {
    await server.kill();
    // Kept for profiling repeated rebuilds (`node --cpu-prof dist/apps/cli/main.js rebuild`).
    if (process.env.BENCH_REBUILD_KEEP) log(`  data dir kept: ${server.dataDir}`);
    else server.removeDataDir();
  }
}
