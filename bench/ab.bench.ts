import { startBenchServer } from './bench-server';
import { BenchReceiver, LoadGenerator, median, PhaseSpec, phaseLine, phaseWarmUpSeconds, warmUpOf } from './e2e.bench';
import { pipelineFromEnv } from './workflows.bench';
import { CUSTOM_RESPONSE_SOURCE, roundTripMedian } from './floor-compare.bench';

/** One A/B step: a load phase, or `custom` (the warm round trip of a custom-response source). */
type AbSpec = { kind: 'load'; label: string; phase: PhaseSpec } | { kind: 'custom'; label: string };

/** What one step measured in one run: CPU per event, delivered/s, p50 and p99 (request -> receipt) and the p99 of the 200s, or the round trip (ms). */
type AbFigures = { cpuUsPerEvent: number; deliveredPerSec: number; p50ms: number; p99ms: number; ackP99ms: number } | { roundTripMs: number };

/**
 * B's ratio to A twice: B's median over A's, and paired by round: each round runs A and B back
 * to back, so B_r / A_r cancels the drift that moves a shared machine between rounds (on a bad
 * day one round's CPU per event is half again another's), and the median of those ratios is the
 * sturdier figure.
 */
function ratios(a: number[], b: number[]): string {
  const ma = median(a);
  const mb = median(b);
  const paired = a.map((x, i) => b[i] / x);
  return `B/A ${(mb / ma).toFixed(3)}; paired by round ${median(paired).toFixed(3)} (${paired.map((r) => r.toFixed(2)).join(', ')})`;
}

/**
 * A/B of two built checkouts on a noisy machine: `BENCH_AB=<dir A>,<dir B>` (each with its own
 * `dist/`, e.g. a `git worktree` of the base built with `node scripts/build.mjs`). Each of
 * `BENCH_AB_ROUNDS` rounds (default 5) starts A's server and B's in turn, the order swapped every
 * round, and runs the same phases against each (`BENCH_PROFILE_RATES`, default `200,sat`, each
 * `BENCH_SECONDS` long, default 6, after a 2 s warm-up at 200/s and one at the phase's own load,
 * `BENCH_PHASE_WARMUP_SECONDS`). Prints every run, then per phase the medians of CPU per event,
 * delivered/s, p50 and p99 (request -> receipt; and the p99 of the 200s) and B's ratio to A, both of the medians and paired by
 * round (see `ratios`). Alternating and taking medians is what makes a difference of a few percent
 * visible here, where one run varies by 15% (by half on a bad day). `custom` in
 * `BENCH_PROFILE_RATES` adds the warm round trip of a custom-response source.
 * A side may carry server settings after its directory, `;`-separated, environment variables or
 * node flags: `BENCH_AB='/work/main;SLUICE_REQUEST_LINGER_MS=0,/work/main;--max-semi-space-size=8'`
 * compares settings within one build. `BENCH_PIPELINE=workflow` loads the workflows bench's
 * three-step workflow instead of the source.
 */
export async function benchAB(log: (s: string) => void): Promise<void> {
  const dirs = (process.env.BENCH_AB ?? '').split(',').filter(Boolean);
  if (dirs.length !== 2) throw new Error('BENCH_AB must name two built checkouts: BENCH_AB=<dir A>,<dir B>');
  const rounds = Number(process.env.BENCH_AB_ROUNDS ?? 5);
  const seconds = Number(process.env.BENCH_SECONDS ?? 6);
  const specs: AbSpec[] = (process.env.BENCH_PROFILE_RATES ?? '200,sat').split(',').map((r): AbSpec => {
    if (r === 'custom') return { kind: 'custom', label: 'custom-response round trip (median of 1,000 sequential POSTs)' };
    const phase: PhaseSpec = r === 'sat'
      ? { label: `saturation (64 concurrent) x ${seconds} s`, concurrency: 64, seconds }
      : { label: `${r}/s x ${seconds} s`, rate: Number(r), seconds };
    if (!(phase.seconds > 0) || ('rate' in phase && !(phase.rate > 0))) throw new Error(`BENCH_PROFILE_RATES: ${r} is not a rate, sat or custom`);
    return { kind: 'load', label: phase.label, phase };
  });
  const results: AbFigures[][][] = [[], []];
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 ? [0, 1] : [1, 0];
    for (const which of order) {
      log(`  -- round ${round}/${rounds}: ${which === 0 ? 'A' : 'B'} (${dirs[which]})`);
      const [dir, ...settings] = dirs[which].split(';');
      const flags = settings.filter((x) => x.startsWith('--'));
      const env = Object.fromEntries(settings.filter((x) => !x.startsWith('--')).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
      results[which].push(await runOnce(dir, env, flags, specs, log));
    }
  }
  log(`== A/B medians of ${rounds} rounds (A: ${dirs[0]}, B: ${dirs[1]})`);
  specs.forEach((spec, i) => {
    const of = (which: number, pick: (f: AbFigures) => number) => results[which].map((run) => pick(run[i]));
    if (spec.kind === 'custom') {
      const ms = [0, 1].map((w) => of(w, (f) => ('roundTripMs' in f ? f.roundTripMs : NaN)));
      log(`  ${spec.label}: A ${median(ms[0]).toFixed(3)} ms, B ${median(ms[1]).toFixed(3)} ms (${ratios(ms[0], ms[1])})`);
      return;
    }
    type LoadFigure = keyof Extract<AbFigures, { p99ms: number }>;
    // One figure of both sides: `<name> A <median><unit>, B <median><unit> (<ratios>)`.
    const both = (name: string, key: LoadFigure, digits: number, unit: string) => {
      const [a, b] = [0, 1].map((w) => of(w, (f) => ('p99ms' in f ? f[key] : NaN)));
      return `${name} A ${median(a).toFixed(digits)}${unit}, B ${median(b).toFixed(digits)}${unit} (${ratios(a, b)})`;
    };
    log(`  ${spec.label}: ${[
      both('CPU per event', 'cpuUsPerEvent', 0, ' us'),
      both('delivered/s', 'deliveredPerSec', 0, ''),
      both('p50', 'p50ms', 1, ' ms'),
      both('p99', 'p99ms', 1, ' ms'),
      both('p99 of the 200s', 'ackP99ms', 1, ' ms'),
    ].join('; ')}`);
  });
}

async function runOnce(root: string, env: Record<string, string>, flags: string[], specs: AbSpec[], log: (s: string) => void): Promise<AbFigures[]> {
  const receiver = new BenchReceiver();
  receiver.keepReceipts = false;
  const receiverUrl = await receiver.start();
  const server = await startBenchServer({ SLUICE_EGRESS_ALLOW: '127.0.0.1', ...env }, { root, extraNodeArgs: flags });
  try {
    const wh = await server.post('/v1/webhooks', { url: receiverUrl, name: 'ab', description: '' });
    const { endpointUrl } = await pipelineFromEnv()(server.post, wh.id as string);
    const responder = specs.some((s) => s.kind === 'custom') ? await server.post('/v1/sources', { component_code: CUSTOM_RESPONSE_SOURCE }) : null;
    const load = new LoadGenerator({ pid: server.proc.pid!, endpointUrl }, receiver);
    try {
      await load.run({ label: 'warm-up', rate: 200, seconds: 2 });
      const warmUp = phaseWarmUpSeconds();
      const figures: AbFigures[] = [];
      for (const spec of specs) {
        if (spec.kind === 'custom') {
          const roundTripMs = await roundTripMedian(responder!.endpoint_url as string, 200, 1000);
          log(`  ${spec.label}: ${(roundTripMs * 1000).toFixed(0)} us`);
          figures.push({ roundTripMs });
          continue;
        }
        if (warmUp > 0) await load.run(warmUpOf(spec.phase, warmUp));
        const phase = await load.run(spec.phase);
        log(phaseLine(phase));
        figures.push(phase);
      }
      return figures;
    } finally {
      load.close();
    }
  } finally {
    await server.stop();
    await receiver.stop();
  }
}
