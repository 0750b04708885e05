import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { median } from './e2e.bench';

type ProjectionModule = typeof import('../libs/projections/src');

/** One build's fold of `events` delivered events, each in its own transactions or all in one. */
type FoldRun = (events: number) => void;

/**
 * The read models' share of the commit path, in process, with no HTTP, IPC or fsync in the way:
 * what the fold of one delivered event (a request, its emit and its run record in one transaction,
 * the delivery's outcome in another, as at 200/s) costs through the projection's own code, on a
 * SQLite file set up as the server sets it up (WAL, 64 MB cache, mmap). "one transaction" folds
 * the same events with a single commit, so the difference is what the commits cost. Stable
 * enough on a noisy machine to compare builds: `BENCH_FOLD_ROOTS=<dir A>,<dir B>` (each with its
 * own `dist/`) alternates them in one process and prints the medians and their ratio.
 */
export async function benchFold(log: (s: string) => void): Promise<void> {
  const roots = (process.env.BENCH_FOLD_ROOTS ?? resolve(__dirname, '..', '..')).split(',').filter(Boolean);
  const rounds = Number(process.env.BENCH_FOLD_ROUNDS ?? 12);
  const perRound = Number(process.env.BENCH_FOLD_EVENTS ?? 2000);
  const dir = mkdtempSync(join(tmpdir(), 'sluice-fold-'));
  try {
    for (const [m, mode] of (['a transaction per group', 'one transaction'] as const).entries()) {
      const runs = roots.map((root, i) => foldRun(root, join(dir, `${m}-${i}.db`), mode === 'one transaction'));
      for (const run of runs) run(perRound);
      const times: number[][] = roots.map(() => []);
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 ? [...runs.keys()].reverse() : [...runs.keys()];
        for (const i of order) {
          const t0 = process.hrtime.bigint();
          runs[i](perRound);
          times[i].push(Number(process.hrtime.bigint() - t0) / perRound / 1000);
        }
      }
      const medians = times.map((t) => median(t));
      const parts = roots.map((root, i) => `${root}: ${medians[i].toFixed(1)} us`);
      const ratio = medians.length === 2 ? ` (B/A ${(medians[1] / medians[0]).toFixed(3)})` : '';
      log(`  fold of one delivered event, ${mode} (median of ${rounds} x ${perRound}): ${parts.join(', ')}${ratio}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function foldRun(root: string, file: string, oneTransaction: boolean): FoldRun {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { ReadModelsProjection, deliveryIdFor } = require(join(root, 'dist/libs/projections/src')) as ProjectionModule;
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('cache_size = -65536');
  db.pragma('mmap_size = 268435456');
  const projection = new ReadModelsProjection(db);
  let position = 0;
  const event = (type: string, data: Record<string, unknown>) => {
    position++;
    return { type, data, id: `ev-${position}`, streamName: 'bench', revision: BigInt(position), position: BigInt(position), metadata: { at: 1_700_000_000_000 + position } };
  };
  const apply = (events: ReturnType<typeof event>[]) => projection.apply(events as never);
  db.transaction(() => apply([event('subscription.created.v1', { subscriptionId: 'sub_1', accountId: 'u_1', emitterId: 'dc_1', listenerId: 'wh_1', eventName: '' })]))();
  let n = 0;
  const one = () => {
    n++;
    const requestId = `q${n}`;
    const emitId = `em${n}`;
    const run = () => apply([
      event('source.http_request_received.v1', { sourceId: 'dc_1', requestId, method: 'POST', path: '/', query: {}, headers: {}, bodyRaw: '{"n":1}', body: { n } }),
      event('source.event_emitted.v1', { sourceId: 'dc_1', accountId: 'u_1', emitId, runId: `r${n}`, summaryId: `${1_700_000_000_000 + n}-${n}`, event: { n }, meta: {} }),
      event('source.run_completed.v1', { sourceId: 'dc_1', runId: `r${n}`, trigger: 'http', requestId, ok: true, logs: [], emitted: 1, durationMs: 1 }),
    ]);
    const outcome = () => apply([event('delivery.delivered.v1', { deliveryId: deliveryIdFor(emitId, 'wh_1'), webhookId: 'wh_1', attempt: 1, statusCode: 200, durationMs: 2 })]);
    if (oneTransaction) {
      run();
      outcome();
    } else {
      db.transaction(run)();
      db.transaction(outcome)();
    }
    projection.takeCreatedDeliveries();
  };
  return (events) => {
    if (oneTransaction) db.transaction(() => { for (let i = 0; i < events; i++) one(); })();
    else for (let i = 0; i < events; i++) one();
  };
}
