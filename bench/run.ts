import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchAB } from './ab.bench';
import { benchApps } from './apps.bench';
import { benchBacklog, benchBigBodies } from './backlog.bench';
import { benchComponents } from './components.bench';
import { benchAgainstFloor } from './floor-compare.bench';
import { benchEventStore } from './event-store.bench';
import { benchFold } from './fold.bench';
import { benchIdle } from './idle.bench';
import { benchProfile } from './profile.bench';
import { benchStalls } from './stalls.bench';
import { benchInstructions } from './instructions.bench';
import { benchProps } from './props.bench';
import { benchNodeSurface } from './node-surface.bench';
import { benchAfterIdle } from './after-idle.bench';
import { benchPageCache } from './page-cache.bench';
import { benchRebuild } from './rebuild.bench';
import { benchRegistry } from './registry.bench';
import { benchSandbox } from './sandbox.bench';
import { benchSourceLoad } from './source-load.bench';
import { benchWalPages } from './wal-pages.bench';
import { benchWalSync } from './wal-sync.bench';
import { benchWorkflows } from './workflows.bench';

/**
 * `npm run bench`: prints figures, asserts nothing. The machines are shared and noisy: compare
 * medians and ratios between runs, not single numbers.
 * `BENCH_ONLY=e2e|rebuild|wal|fold|load|cache|profile|stalls|instructions|walsync|afteridle|idle|ab|store|sandbox|node-surface|components|workflows|backlog|props|apps|registry` runs one part.
 * The e2e part is issue 10's table (`floor-compare.bench.ts`: env vars there).
 */
async function main(): Promise<void> {
  const only = process.env.BENCH_ONLY;
  const print = (s: string) => console.log(s);
  if (!only || only === 'store') {
    print('== embedded event store (SQLite file, medians of 3)');
    const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-store-'));
    const figures = await benchEventStore(dir);
    for (const [k, v] of Object.entries(figures)) print(`  ${k}: ${Math.round(v).toLocaleString('en-US')}`);
    rmSync(dir, { recursive: true, force: true });
  }
  if (!only || only === 'sandbox') {
    print('== sandbox (isolated-vm in worker processes)');
    const figures = await benchSandbox();
    for (const [k, v] of Object.entries(figures)) print(`  ${k}: ${Number(v.toFixed(3)).toLocaleString('en-US')}`);
  }
  if (!only || only === 'node-surface') {
    print('== Node surface: warm isolate heap and cold start, trivial vs axios + feedparser (medians of 11 isolates)');
    await benchNodeSurface(print);
  }
  if (!only || only === 'components') {
    print('== components through the server (deploy, warm invocation, idle RSS)');
    await benchComponents(print);
  }
  if (!only || only === 'e2e') {
    print('== end to end: HTTP source -> emit -> signed webhook delivery (server in a child process), beside a stateless floor forwarder');
    await benchAgainstFloor(print);
  }
  if (!only || only === 'rebuild') {
    print(`== rebuild of every read model from the log (admin rebuild; BENCH_REBUILD_EVENTS=${process.env.BENCH_REBUILD_EVENTS ?? 1_000_000})`);
    await benchRebuild(print);
  }
  if (!only || only === 'wal') {
    // Counts, not timings: stable however busy the machine is.
    print(`== pages each commit writes to the WAL, per delivered event, by table (e2e pipeline at ${process.env.BENCH_WAL_RATE ?? 200}/s)`);
    await benchWalPages(print);
  }
  if (!only || only === 'fold') {
    print(`== the read models' fold of one delivered event, in process (BENCH_FOLD_ROOTS=${process.env.BENCH_FOLD_ROOTS ?? 'this build'})`);
    await benchFold(print);
  }
  if (!only || only === 'load') {
    print(`== a source's first request after a restart: its actor's fold, with and without a snapshot (BENCH_LOAD_RUNS=${process.env.BENCH_LOAD_RUNS ?? '10000,100000'})`);
    await benchSourceLoad(print);
  }
  if (!only || only === 'cache') {
    print(`== SQLite's page cache: its size against the cost of a commit (BENCH_CACHE_COMMITS=${process.env.BENCH_CACHE_COMMITS ?? 120_000})`);
    await benchPageCache(print);
  }
  if (!only || only === 'backlog') {
    print(`== a workflow slower than its triggers: a hanging listener, BENCH_BACKLOG_EVENTS=${process.env.BENCH_BACKLOG_EVENTS ?? 20_000} requests to its source`);
    await benchBacklog(print);
    print(`== a source slower than its requests: a hanging source, BENCH_BIG_BODY_REQUESTS=${process.env.BENCH_BIG_BODY_REQUESTS ?? 3_000} requests of BENCH_BIG_BODY_KB=${process.env.BENCH_BIG_BODY_KB ?? 256} KB`);
    await benchBigBodies(print);
  }
  if (only === 'ab') {
    // Not part of a full run: it needs a second build (BENCH_AB).
    print('== A/B: two builds of the e2e pipeline, alternated, medians (BENCH_AB=<dir A>,<dir B>)');
    await benchAB(print);
  }
  if (only === 'idle') {
    // Not part of a full run: the e2e table prints idle RSS and CPU too; this adds the moment after start and the first call after a restart.
    print('== idle costs: RSS and CPU of the server tree without load, first invocation after a restart');
    await benchIdle(print);
  }
  if (only === 'profile') {
    // Not part of a full run: the probe's wrappers cost CPU, so its timings are not the table's.
    print('== where the CPU goes per event: counts in the server (probe/call-counter.ts) under the e2e pipeline');
    await benchProfile(print);
  }
  if (only === 'stalls') {
    // Not part of a full run: a diagnosis of the p99 (the recorder costs a little CPU itself).
    print('== what the slowest requests waited for: loop stalls, GC pauses, long commits and fsyncs in the server (probe/stall-recorder.ts)');
    await benchStalls(print);
  }
  if (only === 'walsync') {
    // Not part of a full run: the WAL's sync alone, each way in turn (a diagnosis of the disk's waits).
    print('== the WAL sync alone: fdatasync, the light sync, the light sync with the writeback started at the write, and started on io_uring at the write (libs/event-store/native/wal-sync.c)');
    await benchWalSync(print);
  }
  if (only === 'afteridle') {
    // Not part of a full run: a minute idle before each of its runs.
    print('== the first requests after a minute idle, with and without --no-flush-bytecode (server in a child process)');
    await benchAfterIdle(print);
  }
  if (only === 'instructions') {
    // Not part of a full run: about 2-3 minutes per build under valgrind.
    print('== instructions per delivered event in the server and its sandbox worker (callgrind; the kernel not counted)');
    await benchInstructions(print);
  }
  if (!only || only === 'props') {
    print('== prop configuration: POST /v1/components/{id}/props/{prop}/options (server in a child process)');
    await benchProps(print);
  }
  if (!only || only === 'registry') {
    print('== built-in registry: deploy by key (server in a child process, fresh data dir)');
    await benchRegistry(print);
  }
  if (!only || only === 'workflows') {
    print('== workflows: HTTP trigger -> 3 steps (transform, transform, $.send.emit) -> signed webhook delivery; a unit is one run');
    await benchWorkflows(print);
  }
  if (!only || only === 'apps') {
    print('== connected accounts: what resolving an app prop costs a warm run');
    await benchApps(print);
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
