import { createServer, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { type BenchServer, startBenchServer } from './bench-server';
import { cpuSnapshot, processRssMb, treeRssMb } from './e2e.bench';

/** A step that waits for a local server's answer: the gate below never answers, so the workflow's first run hangs. */
const HANGING_STEP = `export default { name: "hang", version: "0.0.1", type: "action", props: { url: { type: "string" } },
  async run() { await fetch(this.url); } }`;

/**
 * A local server that never answers (the gate: components that fetch it hang), and a bench
 * server whose components may reach it, with no run timeout to speak of.
 */
async function hangingGateAndServer(): Promise<{ gateUrl: string; server: BenchServer; closeGate(): void }> {
  const held: ServerResponse[] = [];
  const gate = createServer((_req, res) => void held.push(res));
  await new Promise<void>((r) => gate.listen(0, '127.0.0.1', () => r()));
  const gateUrl = `http://127.0.0.1:${(gate.address() as AddressInfo).port}/`;
  const server = await startBenchServer({ SLUICE_EGRESS_ALLOW: '127.0.0.1', SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1', SLUICE_SANDBOX_TIMEOUT_MS: '3600000' });
  return {
    gateUrl, server,
    closeGate() {
      for (const res of held) res.destroy();
      gate.closeAllConnections();
      gate.close();
    },
  };
}

/**
 * A workflow slower than its triggers: a source whose every request is heard by a workflow whose
 * first step hangs (its lane never moves), `BENCH_BACKLOG_EVENTS` requests (default 20,000) sent
 * by 16 callers. Prints the rate the source took them at, the server's RSS before and after
 * (and 5 s later), and, from the data file after a SIGKILL, how many runs were started and how
 * many emits wait as pending dispatches: their sum is every request (nothing lost). Compare
 * builds with `BENCH_SERVER_ROOT=<other checkout>`.
 */
export async function benchBacklog(log: (s: string) => void): Promise<void> {
  const n = Number(process.env.BENCH_BACKLOG_EVENTS ?? 20_000);
  const { gateUrl, server, closeGate } = await hangingGateAndServer();
  const pid = server.proc.pid!;
  try {
    const src = await server.post('/v1/sources', {
      component_code: 'export default { name: "bench", version: "1", props: { http: { type: "$.interface.http" } }, run(e) { this.$emit(e.body); } }',
    });
    await server.post('/v1/workflows', {
      name: 'hanging listener', trigger: { type: 'emitter', emitter_id: src.id },
      steps: [{ name: 'hang', component_code: HANGING_STEP, configured_props: { url: gateUrl } }],
    });
    await new Promise((r) => setTimeout(r, 1000));
    const rssBefore = processRssMb(pid);
    const treeBefore = treeRssMb(pid);
    let next = 0;
    let refused = 0;
    const cpu0 = cpuSnapshot(pid).tree;
    const t0 = performance.now();
    await Promise.all([...Array(16).keys()].map(async () => {
      while (next < n) {
        const i = next++;
        const r = await fetch(src.endpoint_url as string, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ i }) });
        await r.arrayBuffer();
        if (r.status !== 200) refused++;
      }
    }));
    const seconds = (performance.now() - t0) / 1000;
    // Let the dispatches that follow the last requests settle.
    await new Promise((r) => setTimeout(r, 3000));
    const cpu = cpuSnapshot(pid).tree - cpu0;
    const rssAfter = processRssMb(pid);
    const treeAfter = treeRssMb(pid);
    await new Promise((r) => setTimeout(r, 5000));
    const rssLater = processRssMb(pid);
    await server.kill();
    const db = new Database(join(server.dataDir, 'sluice.db'), { readonly: true });
    const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    const started = count("SELECT count(*) AS n FROM events WHERE type = 'workflow.run_started.v1'");
    const pending = count('SELECT count(*) AS n FROM rm_listener_dispatches');
    const emitted = count("SELECT count(*) AS n FROM events WHERE type = 'source.event_emitted.v1'");
    db.close();
    log(`  ${n.toLocaleString('en-US')} requests by 16 callers in ${seconds.toFixed(1)} s (${Math.round(n / seconds).toLocaleString('en-US')}/s, ${refused} refused), CPU ${(cpu * 1e6 / n).toFixed(0)} us per request over the server's tree`);
    log(`  server RSS ${rssBefore.toFixed(0)} MB before, ${rssAfter.toFixed(0)} MB 3 s after the last request, ${rssLater.toFixed(0)} MB 5 s later (tree ${treeBefore.toFixed(0)} -> ${treeAfter.toFixed(0)} MB)`);
    log(`  after SIGKILL: ${emitted.toLocaleString('en-US')} emits in the log, ${started.toLocaleString('en-US')} runs started, ${pending.toLocaleString('en-US')} dispatches pending (${started + pending === emitted ? 'every emit accounted for' : `MISSING ${emitted - started - pending}`})`);
  } finally {
    closeGate();
    server.removeDataDir();
  }
}

/** A source whose run waits for a local server's answer before it emits (the gate never answers). */
const HANGING_SOURCE = `export default { name: "hang", version: "1", props: { http: { type: "$.interface.http" }, url: { type: "string" } },
  async run(e) { await fetch(this.url); this.$emit({ n: e.body.n }); } }`;

/**
 * A source slower than its requests, taking large bodies: its run hangs, `BENCH_BIG_BODY_REQUESTS`
 * requests (default 3,000) of `BENCH_BIG_BODY_KB` KB (default 256) sent to it by 16 callers. Prints
 * how many it took and refused, the server's RSS as it goes and after, whether it is still up, and
 * whether another source of the same account still takes a request. Each waiting request holds
 * its body several times over in the server and the sandbox worker: before the bytes caps the
 * server's heap grew without bound and it crashed.
 */
export async function benchBigBodies(log: (s: string) => void): Promise<void> {
  const n = Number(process.env.BENCH_BIG_BODY_REQUESTS ?? 3_000);
  const kb = Number(process.env.BENCH_BIG_BODY_KB ?? 256);
  const { gateUrl, server, closeGate } = await hangingGateAndServer();
  const pid = server.proc.pid!;
  try {
    const slow = await server.post('/v1/sources', { component_code: HANGING_SOURCE, configured_props: { url: gateUrl } });
    const other = await server.post('/v1/sources', {
      component_code: 'export default { name: "other", version: "1", props: { http: { type: "$.interface.http" } }, run(e) { this.$emit(e.body); } }',
    });
    await new Promise((r) => setTimeout(r, 1000));
    const rssBefore = processRssMb(pid);
    const pad = 'x'.repeat(kb * 1024 - 32);
    const codes = new Map<string, number>();
    let next = 0;
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      if (server.proc.exitCode === null) rssPeak = Math.max(rssPeak, processRssMb(pid));
    }, 250);
    const t0 = performance.now();
    await Promise.all([...Array(16).keys()].map(async () => {
      while (next < n && server.proc.exitCode === null && server.proc.signalCode === null) {
        const i = next++;
        let code: string;
        try {
          const r = await fetch(slow.endpoint_url as string, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i, pad }) });
          await r.arrayBuffer();
          code = String(r.status);
        } catch (error) {
          code = (error as { cause?: { code?: string } }).cause?.code ?? 'error';
        }
        codes.set(code, (codes.get(code) ?? 0) + 1);
      }
    }));
    clearInterval(sampler);
    const seconds = (performance.now() - t0) / 1000;
    const up = server.proc.exitCode === null && server.proc.signalCode === null;
    const rssAfter = up ? processRssMb(pid) : 0;
    const otherStatus = up
      ? (await fetch(other.endpoint_url as string, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' })).status
      : 'no server';
    log(`  ${next.toLocaleString('en-US')} requests of ${kb} KB by 16 callers in ${seconds.toFixed(1)} s: ${[...codes].map(([c, k]) => `${k.toLocaleString('en-US')} x ${c}`).join(', ')}`);
    log(`  server ${up ? 'up' : `DOWN (exit ${server.proc.exitCode ?? server.proc.signalCode})`}; RSS ${rssBefore.toFixed(0)} MB before, peak ${rssPeak.toFixed(0)} MB, ${rssAfter.toFixed(0)} MB after; another source of the account answers ${otherStatus}`);
  } finally {
    closeGate();
    await server.kill();
    server.removeDataDir();
  }
}
