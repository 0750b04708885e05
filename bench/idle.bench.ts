import { readFileSync } from 'node:fs';
import { startBenchServer } from './bench-server';
import { cpuSnapshot, median, sourcePipeline, treeMemoryOnceMb, treeRssMb } from './e2e.bench';

/** A source with `customResponse`, so the time to its answer includes the run in the sandbox. */
const RESPONDER = `export default { name: "respond", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  run(e) { this.http.respond({ status: 200, body: { ok: true } }); } }`;

/** Processes under `pid` (the sandbox workers of a server). */
function childCount(pid: number): number {
  try {
    const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    return kids ? kids.split(/\s+/).length : 0;
  } catch {
    return 0;
  }
}

/** CPU of the tree over `seconds` without load, ms per second (clock ticks: 10 ms resolution, so use several seconds). */
async function idleCpuMsPerSec(pid: number, seconds: number): Promise<number> {
  const c0 = cpuSnapshot(pid).tree;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return ((cpuSnapshot(pid).tree - c0) * 1000) / ((performance.now() - t0) / 1000);
}

async function timedPost(url: string): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
  await r.text();
  if (r.status !== 200) throw new Error(`responder answered ${r.status}`);
  return performance.now() - t0;
}

/**
 * Idle costs (issue 10): RSS and CPU of the server tree right after start and after the e2e
 * bench's two sources are deployed (the table's "idle" moment), then the first invocation after
 * a restart, when no sandbox worker runs yet: the time to the answer of a custom-response source
 * (median of `BENCH_IDLE_RESTARTS`, default 5), beside the warm answer that follows.
 * `BENCH_IDLE_SECONDS` (default 10): the CPU window.
 */
export async function benchIdle(log: (s: string) => void): Promise<void> {
  const seconds = Number(process.env.BENCH_IDLE_SECONDS ?? 10);
  const restarts = Number(process.env.BENCH_IDLE_RESTARTS ?? 5);
  const server = await startBenchServer({ SLUICE_EGRESS_ALLOW: '127.0.0.1' });
  const pid = server.proc.pid!;
  let dataDir = server.dataDir;
  let path: string;
  try {
    await new Promise((r) => setTimeout(r, 1000));
    log(`  after start, nothing deployed: RSS ${treeRssMb(pid).toFixed(0)} MB in ${1 + childCount(pid)} processes, CPU ${(await idleCpuMsPerSec(pid, seconds)).toFixed(2)} ms/s`);
    const wh = await server.post('/v1/webhooks', { url: 'http://127.0.0.1:9/', name: 'bench', description: '' });
    await sourcePipeline(server.post, wh.id as string);
    const responder = await server.post('/v1/sources', { component_code: RESPONDER });
    path = new URL(responder.endpoint_url as string).pathname;
    await new Promise((r) => setTimeout(r, 1000));
    log(`  two sources deployed (the e2e table's idle moment): RSS ${treeRssMb(pid).toFixed(0)} MB in ${1 + childCount(pid)} processes (${treeMemoryOnceMb(pid).toFixed(0)} MB with shared file pages counted once), CPU ${(await idleCpuMsPerSec(pid, seconds)).toFixed(2)} ms/s`);
  } finally {
    await server.kill();
  }
  const first: number[] = [];
  const warm: number[] = [];
  const idleRss: number[] = [];
  for (let i = 0; i < restarts; i++) {
    const again = await startBenchServer({ SLUICE_EGRESS_ALLOW: '127.0.0.1' }, { dataDir });
    try {
      await new Promise((r) => setTimeout(r, 500));
      idleRss.push(treeRssMb(again.proc.pid!));
      first.push(await timedPost(`${again.url}${path}`));
      warm.push(await timedPost(`${again.url}${path}`));
    } finally {
      await again.kill();
      dataDir = again.dataDir;
    }
  }
  server.removeDataDir();
  log(`  after a restart with sources deployed, before any call: RSS median ${median(idleRss).toFixed(0)} MB`);
  log(`  first invocation after a restart (custom-response round trip, median of ${restarts}): ${median(first).toFixed(1)} ms (all: ${first.map((t) => t.toFixed(1)).join(', ')}); the warm one after it: ${median(warm).toFixed(1)} ms`);
}
