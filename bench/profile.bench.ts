import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBenchServer } from './bench-server';
import { BenchReceiver, LoadGenerator, PhaseSpec, phaseLine } from './e2e.bench';
import { pipelineFromEnv } from './workflows.bench';
import { wakeUpCost } from './machine-day';
import { CUSTOM_RESPONSE_SOURCE, roundTripMedian } from './floor-compare.bench';

type Counters = Record<string, number>;

async function readCounters(pid: number, file: string): Promise<Counters> {
  const before = (() => { try { return readFileSync(file, 'utf8'); } catch { return ''; } })();
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 20));
    try {
      const text = readFileSync(file, 'utf8');
      if (text && text !== before) return (JSON.parse(text) as { counters: Counters }).counters;
    } catch {
      // not written yet
    }
  }
  throw new Error('the call counter did not answer SIGUSR2');
}

/** Self time by function of a `.cpuprofile` (V8's JSON), the `top` largest. */
export function topSelfTime(file: string, top: number): string[] {
  const p = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]; samples: number[]; timeDeltas: number[];
  };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  p.samples.forEach((id, i) => {
    const cf = byId.get(id)!.callFrame;
    const url = cf.url.replace(/^file:\/\//, '').replace(/.*\/dist\//, '').replace(/.*node_modules\//, '');
    const key = `${cf.functionName || '(anonymous)'} ${url}${url ? `:${cf.lineNumber + 1}` : ''}`;
    const dt = p.timeDeltas[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  });
  const busy = total - (self.get('(idle) ') ?? 0);
  return [...self].filter(([k]) => k !== '(idle) ').sort((a, b) => b[1] - a[1]).slice(0, top)
    .map(([k, t]) => `${((100 * t) / busy).toFixed(1).padStart(5)}% of busy  ${(t / 1000).toFixed(0).padStart(6)} ms  ${k}`);
}

/** Clock ticks per second of /proc's CPU times (USER_HZ; 100 on Linux). */
const TICKS_PER_SECOND = 100;

/**
 * Voluntary context switches (times a thread went to sleep, so was woken again) and CPU time
 * (user + system, in clock ticks) of a process's main thread and of its other threads.
 */
function threadsOf(pid: number): { main: number; others: number; mainTicks: number; otherTicks: number } {
  const out = { main: 0, others: 0, mainTicks: 0, otherTicks: 0 };
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const n = Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'))?.[1] ?? 0);
      // Fields 14 and 15 of stat (utime, stime), counted after the command name's closing parenthesis.
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = Number(fields[11]) + Number(fields[12]);
      if (Number(tid) === pid) {
        out.main += n;
        out.mainTicks += ticks;
      } else {
        out.others += n;
        out.otherTicks += ticks;
      }
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** The server's and its sandbox workers' wake-ups and CPU so far, by thread group (Linux; zeros elsewhere). */
function threadCounts(serverPid: number): { wakes: Record<string, number>; ticks: Record<string, number> } {
  const server = threadsOf(serverPid);
  const workers = { main: 0, others: 0, mainTicks: 0, otherTicks: 0 };
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${serverPid}/task/${serverPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    // not Linux, or the server is gone
  }
  for (const child of children) {
    const w = threadsOf(child);
    workers.main += w.main;
    workers.others += w.others;
    workers.mainTicks += w.mainTicks;
    workers.otherTicks += w.otherTicks;
  }
  return {
    wakes: { 'server main thread': server.main, 'server other threads': server.others, 'workers main threads': workers.main, 'workers other threads': workers.others },
    ticks: { 'server main thread': server.mainTicks, 'server other threads': server.otherTicks, 'workers main threads': workers.mainTicks, 'workers other threads': workers.otherTicks },
  };
}

/**
 * Where Sluice's CPU goes per event (issue 10's plan): the e2e source pipeline at
 * `BENCH_PROFILE_RATES` (default 200,1000) for `BENCH_SECONDS` each (`BENCH_PIPELINE=workflow`: the
 * workflows bench's three-step workflow instead), with the call counter
 * (`probe/call-counter.ts`) loaded into the server. Prints, per delivered event, the group
 * commits, appends, fsyncs, log reads, read-model transactions, SQL statements, IPC messages and
 * timers armed. `BENCH_CPU_PROF=1` also runs the server under `--cpu-prof` and prints the top
 * self-time functions of the whole run (start-up included; kept in `BENCH_CPU_PROF_DIR` if set);
 * with `BENCH_PROBE=0` the counter is left out, so the profile's self times are the server's own.
 */
export async function benchProfile(log: (s: string) => void): Promise<void> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  // A rate per second, or `sat` for saturation (64 concurrent callers; `sat:<n>` for n).
  // `custom`: sequential warm round trips of a custom-response source instead of a load phase.
  const phases: (PhaseSpec | 'custom')[] = (process.env.BENCH_PROFILE_RATES ?? '200,1000').split(',').map((r): PhaseSpec | 'custom' => {
    if (r === 'custom') return 'custom';
    if (!r.startsWith('sat')) return { label: `${r}/s x ${seconds} s`, rate: Number(r), seconds };
    const concurrency = r.startsWith('sat:') ? Number(r.slice(4)) : 64;
    return { label: `saturation (${concurrency} concurrent) x ${seconds} s`, concurrency, seconds };
  });
  const dir = mkdtempSync(join(tmpdir(), 'sluice-probe-'));
  const probeFile = join(dir, 'counters.json');
  const profDir = process.env.BENCH_CPU_PROF_DIR ?? join(dir, 'prof');
  // BENCH_PROBE=0 leaves the counter out (its wrappers take the self time of native calls in a profile).
  const probe = process.env.BENCH_PROBE !== '0';
  const nodeArgs = probe ? ['--require', join(__dirname, 'probe', 'call-counter.js')] : [];
  if (process.env.BENCH_CPU_PROF) nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${profDir}`);
  const receiver = new BenchReceiver();
  receiver.keepReceipts = false;
  const receiverUrl = await receiver.start();
  // With a profile, the sandbox workers are profiled too (into the same directory).
  const workerArgs: Record<string, string> = process.env.BENCH_CPU_PROF ? { SLUICE_SANDBOX_WORKER_EXEC_ARGV: `--cpu-prof --cpu-prof-dir=${profDir}` } : {};
  const server = await startBenchServer({ SLUICE_EGRESS_ALLOW: '127.0.0.1', PROBE_FILE: probeFile, ...workerArgs }, { extraNodeArgs: nodeArgs });
  const pid = server.proc.pid!;
  let customUrl = '';
  try {
    const wh = await server.post('/v1/webhooks', { url: receiverUrl, name: 'probe', description: '' });
    const { endpointUrl } = await pipelineFromEnv()(server.post, wh.id as string);
    if (phases.includes('custom')) customUrl = (await server.post('/v1/sources', { component_code: CUSTOM_RESPONSE_SOURCE })).endpoint_url as string;
    const gen = new LoadGenerator({ pid, endpointUrl }, receiver);
    try {
      log(phaseLine(await gen.run({ label: 'warm-up 200/s x 2 s', rate: 200, seconds: 2 })));
      log(`  one timer wake-up of an idle Node process costs ${(await wakeUpCost()).toFixed(0)} us of CPU on this machine (median of 3 x 200)`);
      if (!probe) {
        for (const spec of phases) {
          if (spec === 'custom') {
            await customRoundTrips(customUrl);
            continue;
          }
          const w0 = threadCounts(pid);
          const phase = await gen.run(spec);
          log(phaseLine(phase));
          logThreadCounts(w0, threadCounts(pid), phase.delivered);
        }
      } else await countPerEvent(gen);
    } finally {
      gen.close();
    }
  } finally {
    await server.stop();
    await receiver.stop();
  }
  if (process.env.BENCH_CPU_PROF) {
    const files = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'));
    for (const f of files) {
      log(`  top self time of ${f.includes(`.${pid}.`) ? 'the server' : 'a sandbox worker'} (${join(profDir, f)}), whole run:`);
      for (const line of topSelfTime(join(profDir, f), 30)) log(`    ${line}`);
    }
  }
  if (!process.env.BENCH_CPU_PROF_DIR) rmSync(dir, { recursive: true, force: true });

  /** `BENCH_CUSTOM_COUNT` (5,000 by default) sequential round trips after 500 unmeasured, with each thread group's CPU and wake-ups per round trip. */
  async function customRoundTrips(url: string): Promise<number> {
    const count = Number(process.env.BENCH_CUSTOM_COUNT ?? 5000);
    await roundTripMedian(url, 0, 500);
    const w0 = threadCounts(pid);
    const ms = await roundTripMedian(url, 0, count);
    const w1 = threadCounts(pid);
    log(`  custom-response round trip, ${count} sequential: median ${(ms * 1000).toFixed(0)} us`);
    logThreadCounts(w0, w1, count, 'round trip');
    return count;
  }

  function logThreadCounts(w0: ReturnType<typeof threadCounts>, w1: ReturnType<typeof threadCounts>, delivered: number, unit = 'delivered event'): void {
    const per = (r1: Record<string, number>, r0: Record<string, number>, scale: number, digits: number) =>
      Object.keys(r1).map((k) => `${k} ${(((r1[k] - (r0[k] ?? 0)) * scale) / delivered).toFixed(digits)}`).join(', ');
    log(`    wake-ups (voluntary context switches) per ${unit}: ${per(w1.wakes, w0.wakes, 1, 2)}`);
    // Clock ticks of 10 ms: a group below a few ticks over the window reads as 0 or one tick's worth.
    log(`    CPU per ${unit} by thread (us, /proc clock ticks): ${per(w1.ticks, w0.ticks, 1e6 / TICKS_PER_SECOND, 0)}`);
  }

  async function countPerEvent(gen: LoadGenerator): Promise<void> {
      const idle0 = await readCounters(pid, probeFile);
      await new Promise((r) => setTimeout(r, 5000));
      const idle1 = await readCounters(pid, probeFile);
      const perSecond = Object.entries(idle1).map(([k, v]) => [k, (v - (idle0[k] ?? 0)) / 5] as const).filter(([, v]) => v > 0);
      log(`  idle, per second: ${perSecond.map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ') || 'nothing'}`);
      for (const spec of phases) {
        if (spec === 'custom') {
          const c0 = await readCounters(pid, probeFile);
          const count = await customRoundTrips(customUrl);
          const c1 = await readCounters(pid, probeFile);
          const per = Object.keys(c1).sort().map((k) => [k, (c1[k] - (c0[k] ?? 0)) / count] as const).filter(([, v]) => v > 0);
          log(`    per round trip: ${per.filter(([k]) => !k.includes(' ')).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`);
          continue;
        }
        const c0 = await readCounters(pid, probeFile);
        const w0 = threadCounts(pid);
        const phase = await gen.run(spec);
        const w1 = threadCounts(pid);
        const c1 = await readCounters(pid, probeFile);
        log(phaseLine(phase));
        logThreadCounts(w0, w1, phase.delivered);
        const per = Object.keys(c1).sort().map((k) => [k, (c1[k] - (c0[k] ?? 0)) / phase.delivered] as const).filter(([, v]) => v > 0);
        // Counters by site or text (their keys hold a space) go one per line, largest first.
        log(`    per delivered event: ${per.filter(([k]) => !k.includes(' ')).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`);
        for (const [k, v] of per.filter(([k]) => k.includes(' ')).sort((a, b) => b[1] - a[1])) log(`      ${v.toFixed(2).padStart(9)}  ${k}`);
        const sampled = c1['ipc.sampledMessages'] - (c0['ipc.sampledMessages'] ?? 0);
        if (sampled > 0) {
          const bytes = c1['ipc.sampledBytes'] - (c0['ipc.sampledBytes'] ?? 0);
          const calls = (c1['ipc.sampledBatchedCalls'] ?? 0) - (c0['ipc.sampledBatchedCalls'] ?? 0);
          log(`    IPC to workers (1 message in 20 sampled): ${(bytes / sampled).toFixed(0)} bytes and ${(calls / sampled).toFixed(2)} calls per message`);
        }
      }
  }
}
