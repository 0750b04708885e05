import { startBenchServer } from './bench-server';
import { BenchReceiver, LoadGenerator, median, Phase, PhaseSpec, phaseLine, sourcePipeline } from './e2e.bench';

/**
 * A/B of two built checkouts on a noisy machine: `BENCH_AB=<dir A>,<dir B>` (each with its own
 * `dist/`, e.g. a `git worktree` of the base built with `node scripts/build.mjs`). Each of
 * `BENCH_AB_ROUNDS` rounds (default 5) starts A's server and B's in turn, the order swapped every
 * round, and runs the same phases against each (`BENCH_PROFILE_RATES`, default `200,sat`, each
 * `BENCH_SECONDS` long, default 6, after a 2 s warm-up). Prints every run, then per phase the
 * medians of CPU per event and delivered/s and B's ratio to A. Alternating and taking medians is
 * what makes a difference of a few percent visible here, where one run varies by 15%.
 * A side may carry server settings after its directory, `;`-separated, environment variables or
 * node flags: `BENCH_AB='/work/main;SLUICE_REQUEST_LINGER_MS=0,/work/main;--max-semi-space-size=8'`
 * compares settings within one build.
 */
export async function benchAB(log: (s: string) => void): Promise<void> {
  const dirs = (process.env.BENCH_AB ?? '').split(',').filter(Boolean);
  if (dirs.length !== 2) throw new Error('BENCH_AB must name two built checkouts: BENCH_AB=<dir A>,<dir B>');
  const rounds = Number(process.env.BENCH_AB_ROUNDS ?? 5);
  const seconds = Number(process.env.BENCH_SECONDS ?? 6);
  const specs: PhaseSpec[] = (process.env.BENCH_PROFILE_RATES ?? '200,sat').split(',').map((r) => (r === 'sat'
    ? { label: `saturation (64 concurrent) x ${seconds} s`, concurrency: 64, seconds }
    : { label: `${r}/s x ${seconds} s`, rate: Number(r), seconds }));
  const results: Phase[][][] = [[], []];
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
    const cpu = results.map((runs) => median(runs.map((r) => r[i].cpuUsPerEvent)));
    const rate = results.map((runs) => median(runs.map((r) => r[i].deliveredPerSec)));
    log(`  ${spec.label}: CPU per event A ${cpu[0].toFixed(0)} us, B ${cpu[1].toFixed(0)} us (B/A ${(cpu[1] / cpu[0]).toFixed(3)}); ` +
      `delivered/s A ${rate[0].toFixed(0)}, B ${rate[1].toFixed(0)} (B/A ${(rate[1] / rate[0]).toFixed(3)})`);
  });
}

async function runOnce(root: string, env: Record<string, string>, flags: string[], specs: PhaseSpec[], log: (s: string) => void): Promise<Phase[]> {
  const receiver = new BenchReceiver();
  receiver.keepReceipts = false;
  const receiverUrl = await receiver.start();
  const server = await startBenchServer({ SLUICE_EGRESS_ALLOW: '127.0.0.1', ...env }, { root, extraNodeArgs: flags });
  try {
    const wh = await server.post('/v1/webhooks', { url: receiverUrl, name: 'ab', description: '' });
    const { endpointUrl } = await sourcePipeline(server.post, wh.id as string);
    const load = new LoadGenerator({ pid: server.proc.pid!, endpointUrl }, receiver);
    try {
      await load.run({ label: 'warm-up', rate: 200, seconds: 2 });
      const phases: Phase[] = [];
      for (const spec of specs) {
        const phase = await load.run(spec);
        log(phaseLine(phase));
        phases.push(phase);
      }
      return phases;
    } finally {
      load.close();
    }
  } finally {
    await server.stop();
    await receiver.stop();
  }
}
