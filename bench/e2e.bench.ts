import { readdirSync, readFileSync } from 'node:fs';
import { createServer, Agent, request } from 'node:http';
import { AddressInfo } from 'node:net';
import { startBenchServer } from './bench-server';
const CLK_TCK = 100;

/** CPU seconds (user + system) used so far by a process and all its descendants (Linux /proc). */
export function treeCpuSeconds(pid: number): number {
  const children = new Map<number, number[]>();
  const stats = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(fields[1]);
      const ticks = Number(fields[11]) + Number(fields[12]);
      stats.set(Number(d), ticks);
      const list = children.get(ppid) ?? [];
      list.push(Number(d));
      children.set(ppid, list);
    } catch {
      // The process ended while we looked.
    }
  }
  let total = 0;
  const walk = (p: number) => {
    total += stats.get(p) ?? 0;
    for (const c of children.get(p) ?? []) walk(c);
  };
  walk(pid);
  return total / CLK_TCK;
}

/** CPU seconds (user + system) of one process. */
export function ownCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** Resident set size in MB of a process and its descendants. */
export function treeRssMb(pid: number): number {
  let total = 0;
  const visit = (p: number) => {
    try {
      const status = readFileSync(`/proc/${p}/status`, 'utf8');
      const m = /VmRSS:\s+(\d+) kB/.exec(status);
      if (m) total += Number(m[1]) / 1024;
      const kids = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim();
      for (const k of kids ? kids.split(/\s+/) : []) visit(Number(k));
    } catch {
      // gone
    }
  };
  visit(pid);
  return total;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

interface Phase {
  label: string;
  sent: number;
  accepted: number;
  rejected: number;
  sendSeconds: number;
  drainSeconds: number;
  delivered: number;
  duplicates: number;
  lost: number;
  acceptedPerSec: number;
  deliveredPerSec: number;
  cpuUsPerEvent: number;
  /** The server process alone, without its sandbox workers. */
  serverCpuUsPerEvent: number;
  p50ms: number;
  p95ms: number;
  p99ms: number;
  rssMb: number;
}

/**
 * End-to-end benchmark: a real server (child process) with an HTTP source whose run emits the
 * request body, one subscribed webhook receiver on loopback, and an open-loop load generator.
 */
/** What the load hits: an HTTP endpoint whose requests end as webhook deliveries to `webhookId`. */
export type BenchPipeline = (api: (path: string, body: unknown) => Promise<Record<string, any>>, webhookId: string) => Promise<{ endpointUrl: string }>;

/** The default pipeline: an HTTP source whose run emits the request body, subscribed by the webhook. */
export const sourcePipeline: BenchPipeline = async (api, webhookId) => {
  const src = await api('/v1/sources', {
    component_code: 'export default { name: "bench", version: "1", props: { http: { type: "$.interface.http" } }, run(e) { this.$emit(e.body); } }',
  });
  await api('/v1/subscriptions', { emitter_id: src.id, listener_id: webhookId });
  return { endpointUrl: src.endpoint_url as string };
};

export async function benchEndToEnd(opts: {
  rates: number[]; seconds: number; saturationSeconds: number; log: (s: string) => void; pipeline?: BenchPipeline; unit?: string;
}): Promise<{
  phases: Phase[]; idleRssMb: number;
}> {
  const unit = opts.unit ?? 'event';
  const seen = new Map<number, number>();
  const latencies: number[] = [];
  let duplicates = 0;
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const now = performance.timeOrigin + performance.now();
      res.writeHead(200).end();
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { n: number; t: number };
        const prev = seen.get(body.n) ?? 0;
        if (prev > 0) duplicates++;
        else latencies.push(now - body.t);
        seen.set(body.n, prev + 1);
      } catch {
        // not ours
      }
    });
  });
  receiver.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const server = await startBenchServer({ SLUICE_EGRESS_ALLOW: '127.0.0.1' });
  const { proc } = server;
  const api = server.post;
  const wh = await api('/v1/webhooks', { url: receiverUrl, name: 'bench', description: '' });
  const { endpointUrl } = await (opts.pipeline ?? sourcePipeline)(api, wh.id as string);
  const endpoint = new URL(endpointUrl);
  await new Promise((r) => setTimeout(r, 1000));
  const idleRssMb = treeRssMb(proc.pid!);

  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  let nextN = 0;
  const send = () =>
    new Promise<boolean>((resolveSend) => {
      const body = JSON.stringify({ n: nextN++, t: performance.timeOrigin + performance.now() });
      const req = request({
        host: endpoint.hostname, port: endpoint.port, path: endpoint.pathname, method: 'POST', agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      }, (res) => {
        res.resume();
        res.on('end', () => resolveSend(res.statusCode === 200));
      });
      req.on('error', () => resolveSend(false));
      req.end(body);
    });

  const phases: Phase[] = [];
  const runPhase = async (label: string, drive: () => Promise<{ sent: number; accepted: number; seconds: number }>) => {
    const firstN = nextN;
    latencies.length = 0;
    duplicates = 0;
    const cpu0 = treeCpuSeconds(proc.pid!);
    const main0 = ownCpuSeconds(proc.pid!);
    let rssPeak = 0;
    const rssTimer = setInterval(() => (rssPeak = Math.max(rssPeak, treeRssMb(proc.pid!))), 500);
    const t0 = performance.now();
    const { sent, accepted, seconds } = await drive();
    // Drain: wait until every accepted request is delivered or nothing moves for 5 s.
    let last = -1;
    let stableSince = performance.now();
    const count = () => { let c = 0; for (let n = firstN; n < nextN; n++) if (seen.has(n)) c++; return c; };
    while (true) {
      const c = count();
      if (c >= accepted) break;
      if (c !== last) { last = c; stableSince = performance.now(); }
      if (performance.now() - stableSince > 5000) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const total = (performance.now() - t0) / 1000;
    clearInterval(rssTimer);
    const cpu = treeCpuSeconds(proc.pid!) - cpu0;
    const mainCpu = ownCpuSeconds(proc.pid!) - main0;
    const delivered = count();
    const sorted = [...latencies].sort((a, b) => a - b);
    const phase: Phase = {
      label, sent, accepted, rejected: sent - accepted, sendSeconds: seconds, drainSeconds: total - seconds, delivered, duplicates,
      lost: accepted - delivered, acceptedPerSec: accepted / seconds, deliveredPerSec: delivered / total,
      cpuUsPerEvent: delivered ? (cpu / delivered) * 1e6 : NaN,
      serverCpuUsPerEvent: delivered ? (mainCpu / delivered) * 1e6 : NaN,
      p50ms: percentile(sorted, 50), p95ms: percentile(sorted, 95), p99ms: percentile(sorted, 99), rssMb: rssPeak,
    };
    phases.push(phase);
    opts.log(`  ${label}: accepted ${phase.acceptedPerSec.toFixed(0)}/s, delivered ${phase.deliveredPerSec.toFixed(0)}/s, lost ${phase.lost}, dup ${phase.duplicates}, ` +
      `p50 ${phase.p50ms.toFixed(1)} ms p95 ${phase.p95ms.toFixed(1)} ms p99 ${phase.p99ms.toFixed(1)} ms, CPU ${phase.cpuUsPerEvent.toFixed(0)} us/${unit} (server ${phase.serverCpuUsPerEvent.toFixed(0)}, sandbox ${(phase.cpuUsPerEvent - phase.serverCpuUsPerEvent).toFixed(0)}), RSS ${phase.rssMb.toFixed(0)} MB`);
  };

  const openLoop = (rate: number, seconds: number) => async () => {
    const total = Math.round(rate * seconds);
    const pending: Promise<boolean>[] = [];
    const t0 = performance.now();
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      pending.push(send());
    }
    const results = await Promise.all(pending);
    return { sent: total, accepted: results.filter(Boolean).length, seconds: (performance.now() - t0) / 1000 };
  };
  const closedLoop = (concurrency: number, seconds: number) => async () => {
    const until = performance.now() + seconds * 1000;
    let sent = 0;
    let accepted = 0;
    const t0 = performance.now();
    await Promise.all([...Array(concurrency)].map(async () => {
      while (performance.now() < until) {
        sent++;
        if (await send()) accepted++;
      }
    }));
    return { sent, accepted, seconds: (performance.now() - t0) / 1000 };
  };

  await runPhase('warm-up 200/s x 2 s', openLoop(200, 2));
  phases.length = 0;
  for (const rate of opts.rates) await runPhase(`${rate}/s x ${opts.seconds} s`, openLoop(rate, opts.seconds));
  if (opts.saturationSeconds > 0) await runPhase(`saturation (64 concurrent) x ${opts.saturationSeconds} s`, closedLoop(64, opts.saturationSeconds));

  await server.stop();
  agent.destroy();
  receiver.closeAllConnections();
  receiver.close();
  return { phases, idleRssMb };
}
