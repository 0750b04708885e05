import { join } from 'node:path';
import { Agent, request } from 'node:http';
import Database from 'better-sqlite3';
import { Webhook } from 'standardwebhooks';
import { startBenchProcess, startBenchServer } from './bench-server';
import { BenchReceiver, cpuSnapshot, LoadGenerator, median, Phase, phaseLine, phaseWarmUpSeconds, sourcePipeline, standardPhases, treeMemoryOnceMb, treeRssMb, warmUpOf } from './e2e.bench';
import { machineDayLine } from './machine-day';

/** What one round measured for one target. */
interface RoundFigures {
  idleRssMb: number;
  /** The same moment with shared file pages (the node binary) counted once. */
  idleOnceMb: number;
  /** CPU of all processes while idle (timers, polls, heartbeats), ms per second. */
  idleCpuMsPerSec: number;
  /** RSS of all processes after `BENCH_IDLE_SETTLE_SECONDS` without a request (the server's idle collection has run by then). */
  settledRssMb: number;
  /** RSS of all processes after `BENCH_IDLE_QUIET_SECONDS` without a request (V8's memory reducer, 15-40 s after, has run by then too). */
  quietRssMb: number;
  /** CPU of all processes over `BENCH_IDLE_SETTLED_SECONDS` from then: what an idle server costs for as long as it stays idle. */
  settledCpuMsPerSec: number;
  /** By rate (open loop), and `saturation`. */
  phases: Map<number | 'saturation', Phase>;
  /** The warm-up of the first phase: the first seconds at that load after start (JIT and heap still adapting). */
  afterStart?: Phase;
  /** Median warm round trip of a custom-response source (Sluice), of an answer after one fsync (floor), ms. */
  customResponseMs?: number;
}

/** What the after-drain checks of Sluice found, summed over rounds. */
interface SluiceChecks {
  acknowledged: number;
  notInLog: number;
  lost: number;
  receipts: number;
  unsigned: number;
  /** Receipts of a webhook-id received before (allowed by at-least-once, listed). */
  duplicateReceipts: number;
  /** Bodies that arrived under more than one webhook-id (a second emit of one request: a real duplicate). */
  bodiesUnderSeveralIds: number;
  sync: string;
}

const FLOOR_SCRIPT = join(__dirname, 'floor-forwarder.js');
const RELAY_FLOOR_SCRIPT = join(__dirname, 'relay-floor.js');

/** A source with `customResponse`: answers the HTTP request from its run (issue 10's warm round trip). */
export const CUSTOM_RESPONSE_SOURCE = `export default { name: "respond", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  run(e) { this.http.respond({ status: 200, body: { ok: true, n: e.body && e.body.n } }); } }`;

/** Median of `count` sequential POSTs (after `warm` unmeasured ones), in ms. */
export async function roundTripMedian(url: string, warm: number, count: number): Promise<number> {
  const u = new URL(url);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const hit = () => new Promise<void>((res, rej) => {
    const body = '{"warm":true}';
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (r) => {
      r.resume();
      r.on('end', () => (r.statusCode === 200 ? res() : rej(new Error(`custom response answered ${r.statusCode}`))));
    });
    req.on('error', rej);
    req.end(body);
  });
  try {
    for (let i = 0; i < warm; i++) await hit();
    const times: number[] = [];
    for (let i = 0; i < count; i++) {
      const t0 = performance.now();
      await hit();
      times.push(performance.now() - t0);
    }
    return median(times);
  } finally {
    agent.destroy();
  }
}

/**
 * CPU of a process tree over `BENCH_IDLE_SECONDS` (default 5) without load, in ms per second: what
 * timers, polls and heartbeats cost whatever the rate (a large share of the cost per event at 10/s).
 */
async function idleCpu(pid: number, seconds = Number(process.env.BENCH_IDLE_SECONDS ?? 5)): Promise<number> {
  const c0 = cpuSnapshot(pid).tree;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return ((cpuSnapshot(pid).tree - c0) * 1000) / ((performance.now() - t0) / 1000);
}

/** When idle RSS is read the second time (s after the last call, `BENCH_IDLE_SETTLE_SECONDS`). */
const idleSettleSeconds = (): number => Number(process.env.BENCH_IDLE_SETTLE_SECONDS ?? 15);
/** The third time (`BENCH_IDLE_QUIET_SECONDS`), never before the second. */
const idleQuietSeconds = (): number => Math.max(idleSettleSeconds(), Number(process.env.BENCH_IDLE_QUIET_SECONDS ?? 45));
/** The idle CPU window read from then (s, `BENCH_IDLE_SETTLED_SECONDS`). */
const idleSettledCpuSeconds = (): number => Number(process.env.BENCH_IDLE_SETTLED_SECONDS ?? 10);

/**
 * Idle figures of a process tree, `settleFrom` being when it last did anything: RSS one second
 * after, then CPU over `BENCH_IDLE_SECONDS`, then RSS again once `BENCH_IDLE_SETTLE_SECONDS`
 * (default 15) and once `BENCH_IDLE_QUIET_SECONDS` (default 45) have passed, and CPU again over
 * `BENCH_IDLE_SETTLED_SECONDS` (default 10) from there. The first CPU window holds what going idle
 * costs once (the server's idle collection); the second what staying idle costs. The first RSS
 * still holds what the last requests allocated. The server's idle collection gives it back 5-15 s
 * after; V8's memory reducer, which that collection starts, collects again 15-25 s after the last
 * call (110-200 ms of the server's CPU, measured in 5 s windows), and may give back more (after
 * deploys alone it did not: 146 MB at 15 s and at 45 s). A CPU window from 15 s, as it was, held
 * that collection in some runs (17.5 ms/s) and not in others (0.0).
 */
async function idleFigures(pid: number, settleFrom: number): Promise<Pick<RoundFigures, 'idleRssMb' | 'idleOnceMb' | 'idleCpuMsPerSec' | 'settledRssMb' | 'quietRssMb' | 'settledCpuMsPerSec'>> {
  await new Promise((r) => setTimeout(r, Math.max(0, settleFrom + 1000 - performance.now())));
  const idleRssMb = treeRssMb(pid);
  const idleOnceMb = treeMemoryOnceMb(pid);
  const idleCpuMsPerSec = await idleCpu(pid);
  const settle = idleSettleSeconds() * 1000;
  await new Promise((r) => setTimeout(r, Math.max(0, settleFrom + settle - performance.now())));
  const settledRssMb = treeRssMb(pid);
  const quiet = idleQuietSeconds() * 1000;
  await new Promise((r) => setTimeout(r, Math.max(0, settleFrom + quiet - performance.now())));
  const quietRssMb = treeRssMb(pid);
  // Longer than the first window: an idle server's CPU is a few clock ticks (10 ms each) at most.
  return { idleRssMb, idleOnceMb, idleCpuMsPerSec, settledRssMb, quietRssMb, settledCpuMsPerSec: await idleCpu(pid, idleSettledCpuSeconds()) };
}

/** The standard phases, each after a warm-up at its own load (`phaseWarmUpSeconds`); the first warm-up is kept as `afterStart` (it follows the idle figures' minute, not the start itself). */
async function runPhases(load: LoadGenerator, rates: number[], seconds: number, saturationSeconds: number, log: (s: string) => void): Promise<Pick<RoundFigures, 'phases' | 'afterStart'>> {
  const phases = new Map<number | 'saturation', Phase>();
  let afterStart: Phase | undefined;
  log(phaseLine(await load.run({ label: 'warm-up 200/s x 2 s', rate: 200, seconds: 2 })));
  const warmUp = phaseWarmUpSeconds();
  for (const spec of standardPhases(rates, seconds, saturationSeconds)) {
    if (warmUp > 0) {
      const warm = await load.run(warmUpOf(spec, warmUp));
      afterStart ??= warm;
      log(phaseLine(warm));
    }
    const phase = await load.run(spec);
    phases.set('rate' in spec ? spec.rate : 'saturation', phase);
    log(phaseLine(phase));
  }
  return { phases, afterStart };
}

/** One round of the floor forwarder: its own receiver, the shared load generator class, the same phases. */
async function floorRound(rates: number[], seconds: number, saturationSeconds: number, log: (s: string) => void): Promise<RoundFigures> {
  const receiver = new BenchReceiver();
  receiver.keepReceipts = false;
  const receiverUrl = await receiver.start();
  const floor = await startBenchProcess(FLOOR_SCRIPT, { FLOOR_TARGET: receiverUrl, FLOOR_ACK: process.env.BENCH_FLOOR_ACK ?? 'sent' });
  const load = new LoadGenerator({ pid: floor.proc.pid!, endpointUrl: `${floor.url}/e/floor` }, receiver);
  try {
    const idle = await idleFigures(floor.proc.pid!, performance.now());
    const phased = await runPhases(load, rates, seconds, saturationSeconds, log);
    const customResponseMs = await roundTripMedian(`${floor.url}/durable`, 200, 1000);
    log(`  floor answering after one write and fsync, warm round trip (median of 1,000 sequential POSTs): ${(customResponseMs * 1000).toFixed(0)} us`);
    return { ...idle, ...phased, customResponseMs };
  } finally {
    load.close();
    await floor.stop();
    await receiver.stop();
  }
}

/**
 * One round of the relay floor (`relay-floor.ts`): Sluice's hops and nothing else. Its warm round
 * trip is `/respond`: answered once the body is durable and back from the isolate.
 */
async function relayFloorRound(rates: number[], seconds: number, saturationSeconds: number, log: (s: string) => void): Promise<RoundFigures> {
  const receiver = new BenchReceiver();
  receiver.keepReceipts = false;
  const receiverUrl = await receiver.start();
  const relay = await startBenchProcess(RELAY_FLOOR_SCRIPT, { FLOOR_TARGET: receiverUrl });
  const load = new LoadGenerator({ pid: relay.proc.pid!, endpointUrl: `${relay.url}/e/relay` }, receiver);
  try {
    const idle = await idleFigures(relay.proc.pid!, performance.now());
    const phased = await runPhases(load, rates, seconds, saturationSeconds, log);
    const customResponseMs = await roundTripMedian(`${relay.url}/respond`, 200, 1000);
    log(`  relay floor answering once durable and back from the isolate, warm round trip (median of 1,000 sequential POSTs): ${(customResponseMs * 1000).toFixed(0)} us`);
    return { ...idle, ...phased, customResponseMs };
  } finally {
    load.close();
    await relay.stop();
    await receiver.stop();
  }
}

/**
 * One round of Sluice: the e2e source pipeline, then the custom-response round trip, then the
 * checks after drain. The server is SIGKILLed (no shutdown code runs) and its log is read: every
 * acknowledged request must be in it. That shows each 2xx followed the commit of its event; the
 * fsync before the 2xx (`SLUICE_SQLITE_SYNC=full`, the default, printed) cannot be observed
 * without cutting power. Every receipt's signature is verified with `standardwebhooks`.
 */
async function sluiceRound(rates: number[], seconds: number, saturationSeconds: number, log: (s: string) => void, checks: SluiceChecks): Promise<RoundFigures> {
  const receiver = new BenchReceiver();
  const receiverUrl = await receiver.start();
  const server = await startBenchServer({ SLUICE_EGRESS_ALLOW: '127.0.0.1' });
  let load: LoadGenerator | undefined;
  try {
    const wh = await server.post('/v1/webhooks', { url: receiverUrl, name: 'bench', description: '' });
    const { endpointUrl } = await sourcePipeline(server.post, wh.id as string);
    const responder = await server.post('/v1/sources', { component_code: CUSTOM_RESPONSE_SOURCE });
    const idle = await idleFigures(server.proc.pid!, performance.now());
    load = new LoadGenerator({ pid: server.proc.pid!, endpointUrl }, receiver);
    const phased = await runPhases(load, rates, seconds, saturationSeconds, log);
    const customResponseMs = await roundTripMedian(responder.endpoint_url as string, 200, 1000);
    log(`  custom-response source, warm round trip (median of 1,000 sequential POSTs): ${(customResponseMs * 1000).toFixed(0)} us`);

    await server.kill();
    const db = new Database(join(server.dataDir, 'sluice.db'));
    const inLog = new Set<number>();
    try {
      // The body as the run saw it: recorded as `body`, or only as `bodyRaw` when `bodyFromRaw`.
      const requests = db.prepare(`SELECT CASE WHEN json_extract(data, '$.bodyFromRaw') THEN json_extract(json_extract(data, '$.bodyRaw'), '$.n')
        ELSE json_extract(data, '$.body.n') END AS n FROM events WHERE type = 'source.http_request_received.v1'`);
      for (const row of requests.all() as { n: number | null }[]) {
        if (typeof row.n === 'number') inLog.add(row.n);
      }
    } finally {
      db.close();
    }
    const secret = new Webhook(wh.signing_secret as string);
    const bodiesById = new Map<string, number>();
    const idsByN = new Map<number, Set<string>>();
    let unsigned = 0;
    let duplicateReceipts = 0;
    for (const r of receiver.receipts) {
      try {
        secret.verify(r.body, r.headers);
      } catch {
        unsigned++;
      }
      const id = r.webhookId ?? '';
      if (bodiesById.has(id)) duplicateReceipts++;
      bodiesById.set(id, r.n);
      const ids = idsByN.get(r.n) ?? new Set<string>();
      ids.add(id);
      idsByN.set(r.n, ids);
    }
    const acked = [...load.acknowledged];
    const notInLog = acked.filter((n) => !inLog.has(n)).length;
    const lost = acked.filter((n) => !receiver.firstAt.has(n)).length;
    const several = [...idsByN.values()].filter((s) => s.size > 1).length;
    log(`  checks after drain: ${acked.length} acknowledged, ${notInLog} of them missing from the log after SIGKILL, ${lost} lost, ` +
      `${receiver.receipts.length} receipts, ${unsigned} failing signature verification, ${duplicateReceipts} repeated webhook-ids, ${several} bodies under several webhook-ids`);
    checks.acknowledged += acked.length;
    checks.notInLog += notInLog;
    checks.lost += lost;
    checks.receipts += receiver.receipts.length;
    checks.unsigned += unsigned;
    checks.duplicateReceipts += duplicateReceipts;
    checks.bodiesUnderSeveralIds += several;
    return { ...idle, ...phased, customResponseMs };
  } finally {
    load?.close();
    await server.kill();
    server.removeDataDir();
    await receiver.stop();
  }
}

function fmt(v: number, digits: number): string {
  return Number.isNaN(v) ? 'n/a' : v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/**
 * Issue 10's table: the floor forwarder (`floor-forwarder.ts`), the relay floor (`relay-floor.ts`:
 * Sluice's hops and nothing else; `BENCH_RELAY_FLOOR=0` leaves it out) and Sluice under the same
 * load generator, rates and receiver, in `BENCH_ROUNDS` rounds (default 2; the order reverses
 * every round), medians over rounds. Sluice's figures are also printed as ratios to the floor's
 * and the relay's: Sluice / relay is what Sluice's own code costs, relay / floor what its shape
 * (an fsync per request, a sandbox process and its isolate thread) costs. Env: `BENCH_RATES` (default 1000,200,10), `BENCH_SECONDS` (window, default 10),
 * `BENCH_SATURATION_SECONDS` (default = window), `BENCH_FLOOR_ACK` (`sent` | `received`),
 * `BENCH_IDLE_SECONDS` (idle CPU window, default 5), `BENCH_IDLE_SETTLE_SECONDS` (when idle RSS is
 * read the second time, default 15), `BENCH_IDLE_QUIET_SECONDS` (the third time, default 45),
 * `BENCH_IDLE_SETTLED_SECONDS` (idle CPU window from then, default 10), `BENCH_PHASE_WARMUP_SECONDS` (each window follows that much
 * load at its own rate, default 5; the first of them, right after start, is a row of its own),
 * `BENCH_PAYLOAD_BYTES` (padding added to every request body, default 0: about 30 bytes).
 */
export async function benchAgainstFloor(log: (s: string) => void): Promise<void> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const rates = (process.env.BENCH_RATES ?? '1000,200,10').split(',').map(Number);
  const saturationSeconds = Number(process.env.BENCH_SATURATION_SECONDS ?? seconds);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const withRelay = process.env.BENCH_RELAY_FLOOR !== '0';
  const floor: RoundFigures[] = [];
  const relay: RoundFigures[] = [];
  const sluice: RoundFigures[] = [];
  const checks: SluiceChecks = {
    acknowledged: 0, notInLog: 0, lost: 0, receipts: 0, unsigned: 0, duplicateReceipts: 0, bodiesUnderSeveralIds: 0,
    sync: process.env.SLUICE_SQLITE_SYNC ?? 'full',
  };
  const dayBefore = await machineDayLine();
  log(`  ${dayBefore}`);
  for (let round = 1; round <= rounds; round++) {
    const contenders: ('floor' | 'relay' | 'sluice')[] = withRelay ? ['floor', 'relay', 'sluice'] : ['floor', 'sluice'];
    const order = round % 2 ? contenders : [...contenders].reverse();
    for (const who of order) {
      const name = who === 'floor' ? `floor forwarder (ack after ${process.env.BENCH_FLOOR_ACK ?? 'sent'})`
        : who === 'relay' ? 'relay floor (Sluice\'s hops only)'
        : `Sluice${process.env.BENCH_SERVER_ROOT ? ` (server of ${process.env.BENCH_SERVER_ROOT})` : ''}`;
      log(`  -- round ${round}/${rounds}: ${name}`);
      if (who === 'floor') floor.push(await floorRound(rates, seconds, saturationSeconds, log));
      else if (who === 'relay') relay.push(await relayFloorRound(rates, seconds, saturationSeconds, log));
      else sluice.push(await sluiceRound(rates, seconds, saturationSeconds, log, checks));
    }
  }

  type Row = { label: string; of: (f: RoundFigures) => number; digits: number; higherIsBetter?: boolean };
  const phase = (key: number | 'saturation', pick: (p: Phase) => number) => (f: RoundFigures) => {
    const p = f.phases.get(key);
    return p ? pick(p) : NaN;
  };
  const rows: Row[] = [];
  if (saturationSeconds > 0) {
    rows.push({ label: 'delivered/s at saturation', of: phase('saturation', (p) => p.deliveredPerSec), digits: 0, higherIsBetter: true });
    rows.push({ label: 'CPU per event at saturation (us)', of: phase('saturation', (p) => p.cpuUsPerEvent), digits: 0 });
    // What the bench itself spends, and what is left of the machine: at saturation the load
    // generator and the receiver share the cores with what is measured.
    rows.push({ label: 'the same, load generator and receiver (us)', of: phase('saturation', (p) => p.benchCpuUsPerEvent), digits: 0 });
    rows.push({ label: 'cores busy at saturation, whole machine', of: phase('saturation', (p) => p.machineBusyCores), digits: 2 });
  }
  for (const r of rates) rows.push({ label: `CPU per event at ${r.toLocaleString('en-US')}/s (ms)`, of: phase(r, (p) => p.cpuUsPerEvent / 1000), digits: 2 });
  for (const r of rates.filter((x) => x >= 100)) rows.push({ label: `p99 request -> receipt at ${r.toLocaleString('en-US')}/s (ms)`, of: phase(r, (p) => p.p99ms), digits: 1 });
  for (const r of rates.filter((x) => x >= 100)) rows.push({ label: `p99 request -> its 200 at ${r.toLocaleString('en-US')}/s (ms)`, of: phase(r, (p) => p.ackP99ms), digits: 1 });
  // Every WAL frame, checkpoint copy and body copy the server writes (the floor writes nothing).
  for (const r of rates.filter((x) => x >= 100)) rows.push({ label: `written to storage per event at ${r.toLocaleString('en-US')}/s (KB)`, of: phase(r, (p) => p.diskKbPerEvent), digits: 1 });
  const warmUp = phaseWarmUpSeconds();
  if (warmUp > 0 && rates.length > 0) {
    // Not right after a start: the idle figures come between the deploys and the first load (2 s at 200/s, then this).
    rows.push({ label: `p99 request -> receipt, first ${warmUp} s at ${rates[0].toLocaleString('en-US')}/s, after ${idleQuietSeconds() + idleSettledCpuSeconds()} s idle and 2 s at 200/s (ms)`, of: (f) => f.afterStart?.p99ms ?? NaN, digits: 1 });
  }
  rows.push({ label: 'idle RSS 1 s after the last call, all (MB)', of: (f) => f.idleRssMb, digits: 0 });
  rows.push({ label: 'the same, shared pages once (MB)', of: (f) => f.idleOnceMb, digits: 0 });
  rows.push({ label: `idle RSS after ${idleSettleSeconds()} s idle, all (MB)`, of: (f) => f.settledRssMb, digits: 0 });
  rows.push({ label: `idle RSS after ${idleQuietSeconds()} s idle, all (MB)`, of: (f) => f.quietRssMb, digits: 0 });
  rows.push({ label: 'idle CPU, 1 s after the last call, all (ms per s)', of: (f) => f.idleCpuMsPerSec, digits: 1 });
  rows.push({ label: `idle CPU after ${idleQuietSeconds()} s idle, all (ms per s)`, of: (f) => f.settledCpuMsPerSec, digits: 1 });
  // The floor's figure is an answer after one write and fsync of the body (`/durable`); the relay's
  // one after its fsync and its round trip through the isolate (`/respond`).
  rows.push({ label: 'warm round trip, custom-response / fsync (ms)', of: (f) => f.customResponseMs ?? NaN, digits: 3 });

  const dayAfter = await machineDayLine();
  log(`== issue 10 table: medians of ${rounds} round(s), ${seconds} s windows, each after ${warmUp} s at its load (floor: stateless forwarder, stores and signs nothing${withRelay ? '; relay: the floor with Sluice\'s hops, an fsync per request and a round trip through a sandbox process and its isolate' : ''})`);
  const w = Math.max(...rows.map((r) => r.label.length));
  const ratioOf = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}x` : 'n/a');
  // Columns: each contender's figure, then Sluice's ratios (and the relay's to the floor).
  const heads = withRelay ? ['floor', 'relay', 'Sluice'] : ['floor', 'Sluice'];
  const ratioHeads = withRelay ? ['Sluice / floor', 'relay / floor', 'Sluice / relay'] : ['Sluice / floor'];
  log(`  ${''.padEnd(w)} | ${heads.map((h) => h.padStart(9)).join(' | ')} | ${ratioHeads.join(' | ')}`);
  for (const row of rows) {
    const f = median(floor.map(row.of));
    const s = median(sluice.map(row.of));
    const r = withRelay ? median(relay.map(row.of)) : NaN;
    const figures = withRelay ? [f, r, s] : [f, s];
    const ratios = withRelay ? [ratioOf(s, f), ratioOf(r, f), ratioOf(s, r)] : [ratioOf(s, f)];
    log(`  ${row.label.padEnd(w)} | ${figures.map((v) => fmt(v, row.digits).padStart(9)).join(' | ')} | ${ratios.map((x, k) => x.padStart(ratioHeads[k].length)).join(' | ')}`);
  }
  log(`  Sluice checks after drain (all rounds, SLUICE_SQLITE_SYNC=${checks.sync}): ${checks.acknowledged} acknowledged, ` +
    `${checks.notInLog} not in the log after SIGKILL, ${checks.lost} lost, ${checks.unsigned} of ${checks.receipts} receipts unsigned, ` +
    `${checks.duplicateReceipts} repeated webhook-ids (at-least-once), ${checks.bodiesUnderSeveralIds} bodies under several webhook-ids`);
  const failed = checks.notInLog + checks.lost + checks.unsigned + checks.bodiesUnderSeveralIds;
  log(`  before the rounds, ${dayBefore}`);
  log(`  after the rounds,  ${dayAfter}`);
  log(failed === 0 ? '  checks: OK (durable before 2xx, every delivery signed, nothing lost, no body delivered twice under two ids)' : `  checks: FAILED (${failed} problems above)`);
}
