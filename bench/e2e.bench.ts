import { readdirSync, readFileSync } from 'node:fs';
import { createServer, Agent, IncomingMessage, request } from 'node:http';
import { AddressInfo } from 'node:net';
import { startBenchServer } from './bench-server';

const CLK_TCK = 100;

/**
 * CPU seconds (user + system) used so far by a process alone (`own`) and with all its descendants
 * (`tree`), from one scan of Linux /proc so the two agree (ticks of 10 ms).
 */
export function cpuSnapshot(pid: number): { tree: number; own: number } {
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
  return { tree: total / CLK_TCK, own: (stats.get(pid) ?? 0) / CLK_TCK };
}

/** CPU seconds (user + system) used so far by a process and all its descendants (Linux /proc). */
export function treeCpuSeconds(pid: number): number {
  return cpuSnapshot(pid).tree;
}

/**
 * Bytes a process and its descendants have caused to be sent to storage so far (`write_bytes` of
 * Linux `/proc/<pid>/io`: counted when a page is dirtied, so a WAL frame written twice before its
 * writeback counts twice, as it costs). 0 where the kernel does not keep it.
 */
export function treeWrittenBytes(pid: number): number {
  let total = 0;
  for (const p of treePids(pid)) {
    try {
      const m = /^write_bytes: (\d+)$/m.exec(readFileSync(`/proc/${p}/io`, 'utf8'));
      if (m) total += Number(m[1]);
    } catch {
      // gone
    }
  }
  return total;
}

/**
 * Characters of padding the load generator adds to every request body (`BENCH_PAYLOAD_BYTES`,
 * default 0: the body is `{"n":...,"t":...}`, about 30 bytes). Real webhook payloads are often
 * kilobytes; every copy of the body the server stores then shows in the bytes written per event.
 */
export function payloadPadBytes(): number {
  const bytes = Number(process.env.BENCH_PAYLOAD_BYTES ?? 0);
  if (!Number.isInteger(bytes) || bytes < 0 || bytes > 400_000) {
    throw new Error(`BENCH_PAYLOAD_BYTES must be a whole number of bytes from 0 to 400000 (got ${process.env.BENCH_PAYLOAD_BYTES})`);
  }
  return bytes;
}

/**
 * The shape of the padding (`BENCH_PAYLOAD_SHAPE`): `string` (default), one string of `x`s, the
 * cheapest JSON there is; `fields`, records of small members (ids, names, URLs, flags, nested
 * objects), as a code host's or a shop's webhook is, where parsing and serialising cost per
 * member rather than per byte.
 */
export function payloadPadShape(): 'string' | 'fields' {
  const shape = process.env.BENCH_PAYLOAD_SHAPE ?? 'string';
  if (shape !== 'string' && shape !== 'fields') throw new Error(`BENCH_PAYLOAD_SHAPE must be string or fields (got ${shape})`);
  return shape;
}

/** About `bytes` characters of JSON members `"pad":...` in the shape {@link payloadPadShape} names. */
export function payloadPadText(bytes: number, shape = payloadPadShape()): string {
  if (bytes <= 0) return '';
  if (shape === 'string') return `,"pad":"${'x'.repeat(bytes)}"`;
  const items: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const item = JSON.stringify({
      id: 1_000_000 + i, node_id: `MDQ6VXNlcjE${i}`, login: `user-${i}`, type: i % 3 ? 'User' : 'Bot', site_admin: i % 7 === 0,
      html_url: `https://example.com/user-${i}`, score: i * 1.5, labels: ['bug', 'p' + (i % 4)],
      owner: { id: i, name: `Owner ${i}`, verified: true }, created_at: '2026-12-06T05:00:00Z', note: null,
    });
    items.push(item);
    size += item.length + 1;
  }
  return `,"pad":[${items.join(',')}]`;
}

/** Resident set size in MB of one process (0 once it is gone). */
export function processRssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0; // gone
  }
}

/** Resident set size in MB of a process and its descendants. */
export function treeRssMb(pid: number): number {
  return treePids(pid).reduce((total, p) => total + processRssMb(p), 0);
}

/** The pids of a process and all its descendants (Linux /proc). */
function treePids(pid: number): number[] {
  const pids: number[] = [];
  const visit = (p: number) => {
    pids.push(p);
    try {
      const kids = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim();
      for (const k of kids ? kids.split(/\s+/) : []) visit(Number(k));
    } catch {
      // gone
    }
  };
  visit(pid);
  return pids;
}

/**
 * Memory of a process tree with shared file pages counted once: every process's anonymous pages,
 * plus, per mapped file, the largest resident size any process of the tree has of it. Summing
 * RSS counts the node binary's pages once per process (server and workers map the same file);
 * this does not (it may undercount a file whose processes touched different pages of it).
 */
export function treeMemoryOnceMb(pid: number): number {
  let anonKb = 0;
  const fileKb = new Map<string, number>();
  for (const p of treePids(pid)) {
    let text: string;
    try {
      text = readFileSync(`/proc/${p}/smaps`, 'utf8');
    } catch {
      continue;
    }
    const perFile = new Map<string, number>();
    let path = '';
    let rss = 0;
    const close = () => {
      if (path && !path.startsWith('[')) perFile.set(path, (perFile.get(path) ?? 0) + rss);
    };
    for (const line of text.split('\n')) {
      const head = /^[0-9a-f]+-[0-9a-f]+\s+\S+\s+\S+\s+\S+\s+\d+\s*(.*)$/.exec(line);
      if (head) {
        close();
        path = head[1].trim();
        rss = 0;
        continue;
      }
      const m = /^(Rss|Anonymous):\s+(\d+) kB/.exec(line);
      if (!m) continue;
      if (m[1] === 'Rss') rss += Number(m[2]);
      else {
        anonKb += Number(m[2]);
        rss -= Number(m[2]);
      }
    }
    close();
    for (const [f, kb] of perFile) fileKb.set(f, Math.max(fileKb.get(f) ?? 0, kb));
  }
  let total = anonKb;
  for (const kb of fileKb.values()) total += kb;
  return total / 1024;
}

/** The p-th percentile of an ascending list (nearest rank); NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** The median (the mean of the two middle values for an even count); NaN when empty. */
export function median(values: number[]): number {
  const s = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** What one load phase gave. Latencies are from the moment a request was sent to the first receipt of its body. */
/**
 * The whole machine's CPU time so far, in clock ticks from /proc/stat's first line: busy (all but
 * idle and iowait) and total, and its number of cores. Zeros off Linux.
 */
function machineTicks(): { busy: number; total: number; cores: number } {
  try {
    const text = readFileSync('/proc/stat', 'utf8');
    const fields = text.slice(0, text.indexOf('\n')).trim().split(/\s+/).slice(1).map(Number);
    const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
    const cores = (text.match(/^cpu\d+ /gm) ?? []).length;
    return { busy: total - fields[3] - fields[4], total, cores };
  } catch {
    return { busy: 0, total: 0, cores: 0 };
  }
}

export interface Phase {
  label: string;
  sent: number;
  accepted: number;
  rejected: number;
  sendSeconds: number;
  drainSeconds: number;
  delivered: number;
  /** Receipts of a body already received (by the `n` the load generator put in it). */
  duplicates: number;
  lost: number;
  acceptedPerSec: number;
  deliveredPerSec: number;
  /** CPU (user + system) of the target and all its child processes, per delivered event. */
  cpuUsPerEvent: number;
  /** The target process alone, without its children (sandbox workers). */
  serverCpuUsPerEvent: number;
  /** This bench process (the load generator and the webhook receiver), per delivered event. */
  benchCpuUsPerEvent: number;
  /** Cores the whole machine kept busy over the phase (all processes, from /proc/stat), and how many it has. */
  machineBusyCores: number;
  machineCores: number;
  p50ms: number;
  p95ms: number;
  p99ms: number;
  /** Bytes the target's process tree caused to be written to storage, per delivered event (KB). */
  diskKbPerEvent: number;
  /** Request -> the caller's 200 (the acknowledgement), p50 and p99. */
  ackP50ms: number;
  ackP99ms: number;
  rssMb: number;
}

/** One request the bench receiver got: enough to check its signature and count it later. */
export interface BenchReceipt {
  n: number;
  webhookId: string | undefined;
  headers: Record<string, string>;
  body: string;
}

/**
 * The webhook receiver of the benchmarks, on loopback: answers 200 at once, notes the first
 * receipt time of each body's `n` (for request -> receipt latency) and keeps every receipt, so
 * signatures and duplicates are checked after the load (checking them inline would take CPU
 * from the measured server on a 2-core machine).
 */
export class BenchReceiver {
  readonly receipts: BenchReceipt[] = [];
  /** First receipt time (ms, performance.timeOrigin based) by `n`. */
  readonly firstAt = new Map<number, number>();
  /** Receipts per `n`. */
  readonly count = new Map<number, number>();
  /** Keep headers and bodies (for signature checks); off for the pipelines that do not sign-check. */
  keepReceipts = true;
  private readonly server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const now = performance.timeOrigin + performance.now();
      res.writeHead(200).end();
      const body = Buffer.concat(chunks).toString();
      let n: number;
      try {
        n = (JSON.parse(body) as { n: number }).n;
      } catch {
        return; // not ours
      }
      if (typeof n !== 'number') return;
      if (!this.firstAt.has(n)) this.firstAt.set(n, now);
      this.count.set(n, (this.count.get(n) ?? 0) + 1);
      if (this.keepReceipts) {
        const headers: Record<string, string> = {};
        for (const h of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
          const v = req.headers[h];
          if (typeof v === 'string') headers[h] = v;
        }
        this.receipts.push({ n, webhookId: headers['webhook-id'], headers, body });
      }
    });
  });

  async start(): Promise<string> {
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** What the load generator drives: a process (whose CPU and RSS tree is measured) and the URL it POSTs to. */
export interface LoadTarget {
  pid: number;
  endpointUrl: string;
}

/** A phase of load: open loop at `rate`/s, or closed loop with `concurrency` callers (saturation). */
export type PhaseSpec = { label: string; seconds: number } & ({ rate: number } | { concurrency: number });

/**
 * Seconds of load at a phase's own rate (or concurrency) run before it is measured
 * (`BENCH_PHASE_WARMUP_SECONDS`, default 5; 0 for none). A server just started, or just moved from
 * one rate to another, is not yet in its steady state: its JIT and heap are still adapting, and at
 * 1,000/s its first seconds have a p99 several times that of the next ones. The table measures the
 * steady state and prints the first seconds after start as a row of their own.
 */
export function phaseWarmUpSeconds(): number {
  const s = Number(process.env.BENCH_PHASE_WARMUP_SECONDS ?? 5);
  if (!(s >= 0)) throw new Error(`BENCH_PHASE_WARMUP_SECONDS must be a number of seconds (got ${process.env.BENCH_PHASE_WARMUP_SECONDS})`);
  return s;
}

/** The unmeasured warm-up of `spec`: the same load for `seconds` (see {@link phaseWarmUpSeconds}). */
export function warmUpOf(spec: PhaseSpec, seconds: number): PhaseSpec {
  const load = 'rate' in spec ? `${spec.rate}/s` : `${spec.concurrency} concurrent`;
  return 'rate' in spec
    ? { label: `warm-up ${load} x ${seconds} s`, rate: spec.rate, seconds }
    : { label: `warm-up ${load} x ${seconds} s`, concurrency: spec.concurrency, seconds };
}

/** Open-loop phases at each rate, then saturation (64 concurrent callers) when `saturationSeconds` > 0. */
export function standardPhases(rates: number[], seconds: number, saturationSeconds: number): PhaseSpec[] {
  const phases: PhaseSpec[] = rates.map((rate) => ({ label: `${rate}/s x ${seconds} s`, rate, seconds }));
  if (saturationSeconds > 0) phases.push({ label: `saturation (64 concurrent) x ${saturationSeconds} s`, concurrency: 64, seconds: saturationSeconds });
  return phases;
}

/**
 * The load generator shared by every target (floor and Sluice get exactly the same): POSTs
 * `{"n":<sequence>,"t":<send time>}` over keep-alive sockets, then drains each phase until every
 * accepted request was received or nothing moved for 5 s. `acknowledged` collects the `n` of
 * every request answered 200 (for the durability and loss checks).
 */
export class LoadGenerator {
  readonly acknowledged = new Set<number>();
  /** Send time of each `n` (the same clock as the receiver's). */
  private readonly sentAt = new Map<number, number>();
  /** Request -> 200, ms, by `n`. */
  private readonly ackMs = new Map<number, number>();
  private nextN: number;
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 256 });
  private readonly endpoint: URL;
  /** `,"pad":...` of {@link payloadPadBytes} and {@link payloadPadShape}, or '' (the same text in every body). */
  private readonly pad: string;

  constructor(private readonly target: LoadTarget, private readonly receiver: BenchReceiver, firstN = 0) {
    this.endpoint = new URL(target.endpointUrl);
    this.nextN = firstN;
    this.pad = payloadPadText(payloadPadBytes());
  }

  /** The next `n` this generator would send. */
  get next(): number {
    return this.nextN;
  }

  private send(): Promise<boolean> {
    return new Promise<boolean>((resolveSend) => {
      const n = this.nextN++;
      const t = performance.timeOrigin + performance.now();
      this.sentAt.set(n, t);
      // The text JSON.stringify({ n, t }) makes, with the padding (if any) as a last member.
      const body = `{"n":${n},"t":${t}${this.pad}}`;
      const req = request({
        host: this.endpoint.hostname, port: this.endpoint.port, path: this.endpoint.pathname, method: 'POST', agent: this.agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      }, (res) => {
        res.resume();
        res.on('end', () => {
          const ok = res.statusCode === 200;
          if (ok) {
            this.acknowledged.add(n);
            this.ackMs.set(n, performance.timeOrigin + performance.now() - t);
          }
          resolveSend(ok);
        });
      });
      req.on('error', () => resolveSend(false));
      req.end(body);
    });
  }

  private openLoop(rate: number, seconds: number) {
    return async () => {
      const total = Math.round(rate * seconds);
      const pending: Promise<boolean>[] = [];
      const t0 = performance.now();
      for (let i = 0; i < total; i++) {
        const due = t0 + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        pending.push(this.send());
      }
      const results = await Promise.all(pending);
      return { sent: total, accepted: results.filter(Boolean).length, seconds: (performance.now() - t0) / 1000 };
    };
  }

  private closedLoop(concurrency: number, seconds: number) {
    return async () => {
      const until = performance.now() + seconds * 1000;
      let sent = 0;
      let accepted = 0;
      const t0 = performance.now();
      await Promise.all([...Array(concurrency)].map(async () => {
        while (performance.now() < until) {
          sent++;
          if (await this.send()) accepted++;
        }
      }));
      return { sent, accepted, seconds: (performance.now() - t0) / 1000 };
    };
  }

  private shared = false;

  /**
   * `BENCH_SHARED_CONNECTIONS=1`: before its first phase, the generator makes 64 API calls at once
   * through its agent (unauthenticated, so each is answered 401), and its events then go over
   * those same keep-alive connections, as a reverse proxy's pooled connections or an SDK's would
   * carry both. Until the lean server kept such connections (lanes), they were Node's for good.
   */
  private async shareConnections(): Promise<void> {
    if (this.shared || process.env.BENCH_SHARED_CONNECTIONS !== '1') return;
    this.shared = true;
    await Promise.all([...Array(64)].map(() => new Promise<void>((resolve) => {
      const req = request({ host: this.endpoint.hostname, port: this.endpoint.port, path: '/v1/sources', method: 'GET', agent: this.agent }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', () => resolve());
      req.end();
    })));
  }

  /** Runs one phase and measures it (CPU of the target's process tree, latencies, peak RSS). */
  async run(spec: PhaseSpec): Promise<Phase> {
    await this.shareConnections();
    const { pid } = this.target;
    const { receiver } = this;
    const drive = 'rate' in spec ? this.openLoop(spec.rate, spec.seconds) : this.closedLoop(spec.concurrency, spec.seconds);
    const firstN = this.nextN;
    const cpu0 = cpuSnapshot(pid);
    const written0 = treeWrittenBytes(pid);
    const bench0 = process.cpuUsage();
    const machine0 = machineTicks();
    let rssPeak = 0;
    const rssTimer = setInterval(() => (rssPeak = Math.max(rssPeak, treeRssMb(pid))), 500);
    const t0 = performance.now();
    const { sent, accepted, seconds } = await drive();
    let last = -1;
    let stableSince = performance.now();
    const count = () => { let c = 0; for (let n = firstN; n < this.nextN; n++) if (receiver.firstAt.has(n)) c++; return c; };
    while (true) {
      const c = count();
      if (c >= accepted) break;
      if (c !== last) { last = c; stableSince = performance.now(); }
      if (performance.now() - stableSince > 5000) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const total = (performance.now() - t0) / 1000;
    clearInterval(rssTimer);
    const cpu1 = cpuSnapshot(pid);
    const written = treeWrittenBytes(pid) - written0;
    const benchCpu = process.cpuUsage(bench0);
    const machine1 = machineTicks();
    const cpu = cpu1.tree - cpu0.tree;
    const mainCpu = cpu1.own - cpu0.own;
    const latencies: number[] = [];
    let delivered = 0;
    let duplicates = 0;
    let lost = 0;
    for (let n = firstN; n < this.nextN; n++) {
      const at = receiver.firstAt.get(n);
      if (at !== undefined) {
        delivered++;
        duplicates += (receiver.count.get(n) ?? 1) - 1;
        const sentAt = this.sentAt.get(n);
        if (sentAt !== undefined) latencies.push(at - sentAt);
      } else if (this.acknowledged.has(n)) lost++;
    }
    latencies.sort((a, b) => a - b);
    const acks: number[] = [];
    for (let n = firstN; n < this.nextN; n++) {
      const ms = this.ackMs.get(n);
      if (ms !== undefined) acks.push(ms);
      this.ackMs.delete(n);
    }
    acks.sort((a, b) => a - b);
    return {
      label: spec.label, sent, accepted, rejected: sent - accepted, sendSeconds: seconds, drainSeconds: total - seconds, delivered, duplicates,
      lost, acceptedPerSec: accepted / seconds, deliveredPerSec: delivered / total,
      cpuUsPerEvent: delivered ? (cpu / delivered) * 1e6 : NaN,
      serverCpuUsPerEvent: delivered ? (mainCpu / delivered) * 1e6 : NaN,
      benchCpuUsPerEvent: delivered ? (benchCpu.user + benchCpu.system) / delivered : NaN,
      machineBusyCores: machine1.total > machine0.total ? ((machine1.busy - machine0.busy) / (machine1.total - machine0.total)) * machine1.cores : NaN,
      machineCores: machine1.cores,
      p50ms: percentile(latencies, 50), p95ms: percentile(latencies, 95), p99ms: percentile(latencies, 99), rssMb: rssPeak,
      diskKbPerEvent: delivered ? written / 1024 / delivered : NaN,
      ackP50ms: percentile(acks, 50), ackP99ms: percentile(acks, 99),
    };
  }

  /** Send and first receipt times (ms, the receiver's clock) of the requests numbered `from` up to `to`, those received. */
  receipts(from: number, to: number): { n: number; sentAt: number; receivedAt: number }[] {
    const out: { n: number; sentAt: number; receivedAt: number }[] = [];
    for (let n = from; n < to; n++) {
      const sentAt = this.sentAt.get(n);
      const receivedAt = this.receiver.firstAt.get(n);
      if (sentAt !== undefined && receivedAt !== undefined) out.push({ n, sentAt, receivedAt });
    }
    return out;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** One line per phase, as `npm run bench` has always printed them. */
export function phaseLine(phase: Phase, unit = 'event'): string {
  return `  ${phase.label}: accepted ${phase.acceptedPerSec.toFixed(0)}/s, delivered ${phase.deliveredPerSec.toFixed(0)}/s, lost ${phase.lost}, dup ${phase.duplicates}, ` +
    `p50 ${phase.p50ms.toFixed(1)} ms p95 ${phase.p95ms.toFixed(1)} ms p99 ${phase.p99ms.toFixed(1)} ms (200 after p50 ${phase.ackP50ms.toFixed(1)} p99 ${phase.ackP99ms.toFixed(1)} ms), CPU ${phase.cpuUsPerEvent.toFixed(0)} us/${unit} (server ${phase.serverCpuUsPerEvent.toFixed(0)}, children ${(phase.cpuUsPerEvent - phase.serverCpuUsPerEvent).toFixed(0)}; load generator and receiver ${phase.benchCpuUsPerEvent.toFixed(0)}), machine busy ${phase.machineBusyCores.toFixed(2)} of ${phase.machineCores} cores, RSS ${phase.rssMb.toFixed(0)} MB, written ${phase.diskKbPerEvent.toFixed(1)} KB/${unit}`;
}

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

/**
 * End-to-end benchmark of one pipeline: a real server (child process), one subscribed webhook
 * receiver on loopback, and the open-loop load generator, after a 2 s warm-up at 200/s; each phase
 * after a warm-up at its own load ({@link phaseWarmUpSeconds}).
 */
export async function benchEndToEnd(opts: {
  rates: number[]; seconds: number; saturationSeconds: number; log: (s: string) => void; pipeline?: BenchPipeline; unit?: string;
}): Promise<{
  phases: Phase[]; idleRssMb: number;
}> {
  const receiver = new BenchReceiver();
  receiver.keepReceipts = false;
  const receiverUrl = await receiver.start();
  const server = await startBenchServer({ SLUICE_EGRESS_ALLOW: '127.0.0.1' });
  const wh = await server.post('/v1/webhooks', { url: receiverUrl, name: 'bench', description: '' });
  const { endpointUrl } = await (opts.pipeline ?? sourcePipeline)(server.post, wh.id as string);
  await new Promise((r) => setTimeout(r, 1000));
  const idleRssMb = treeRssMb(server.proc.pid!);
  const load = new LoadGenerator({ pid: server.proc.pid!, endpointUrl }, receiver);
  const phases: Phase[] = [];
  try {
    opts.log(phaseLine(await load.run({ label: 'warm-up 200/s x 2 s', rate: 200, seconds: 2 }), opts.unit));
    const warmUp = phaseWarmUpSeconds();
    for (const spec of standardPhases(opts.rates, opts.seconds, opts.saturationSeconds)) {
      if (warmUp > 0) opts.log(phaseLine(await load.run(warmUpOf(spec, warmUp)), opts.unit));
      const phase = await load.run(spec);
      phases.push(phase);
      opts.log(phaseLine(phase, opts.unit));
    }
  } finally {
    load.close();
    await server.stop();
    await receiver.stop();
  }
  return { phases, idleRssMb };
}
