import { startBenchServer } from './bench-server';
import { BenchReceiver, median, processRssMb, sourcePipeline } from './e2e.bench';

/** The server's flag measured here, and the node flags of the side without it. */
const FLAG = '--no-flush-bytecode';

/**
 * The first requests after a server sat idle (`BENCH_ONLY=afteridle`): a source and a webhook
 * deployed, `BENCH_AFTER_IDLE_SECONDS` (default 55, about what the e2e table's idle figures take
 * before its first load) of quiet, then 400 requests at 200/s, each timed from its request to its
 * 200. Run `BENCH_AFTER_IDLE_PAIRS` times (default 2) with the server's own flags and with them
 * less `--no-flush-bytecode`, alternated (V8 drops the bytecode of functions that have not run
 * for a few major collections; an idle server makes such collections). Prints, per run, the
 * median and the slowest of the first 50 requests and of the last 50, and the server's RSS after
 * the deploys; then the medians over the pairs.
 */
export async function benchAfterIdle(log: (s: string) => void): Promise<void> {
  const idleSeconds = Number(process.env.BENCH_AFTER_IDLE_SECONDS ?? 55);
  const pairs = Number(process.env.BENCH_AFTER_IDLE_PAIRS ?? 2);
  const firsts = new Map<string, number[]>([['with', []], ['without', []]]);
  for (let pair = 0; pair < pairs; pair++) {
    for (const side of pair % 2 === 0 ? ['without', 'with'] : ['with', 'without']) {
      const { first, last, rssMb } = await firstRequests(idleSeconds, side === 'without');
      firsts.get(side)!.push(first.median);
      log(`  ${side.padEnd(7)} ${FLAG}: first 50 requests median ${first.median.toFixed(1)} ms (slowest ${first.max.toFixed(1)}), last 50 median ${last.median.toFixed(1)} ms (slowest ${last.max.toFixed(1)}); server RSS after the deploys ${rssMb.toFixed(1)} MB`);
    }
  }
  const withFlag = median(firsts.get('with')!);
  const without = median(firsts.get('without')!);
  log(`  first 50 requests after ${idleSeconds} s idle, median of ${pairs} run(s) a side: with ${withFlag.toFixed(1)} ms, without ${without.toFixed(1)} ms (with / without ${(withFlag / without).toFixed(2)}x)`);
}

async function firstRequests(idleSeconds: number, withoutFlag: boolean): Promise<{ first: { median: number; max: number }; last: { median: number; max: number }; rssMb: number }> {
  const receiver = new BenchReceiver();
  const url = await receiver.start();
  // The flag is among the server's own (SERVER_NODE_FLAGS); a later `--flush-bytecode` undoes it.
  const server = await startBenchServer({ SLUICE_EGRESS_ALLOW: '127.0.0.1' }, { extraNodeArgs: withoutFlag ? ['--flush-bytecode'] : [] });
  try {
    const wh = await server.post('/v1/webhooks', { url, name: 'bench', description: '' });
    const { endpointUrl } = await sourcePipeline(server.post, wh.id as string);
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    const rssMb = processRssMb(server.proc.pid!);
    const ms: number[] = new Array(400);
    const t0 = performance.now();
    await Promise.all(Array.from({ length: ms.length }, async (_, i) => {
      await new Promise((r) => setTimeout(r, Math.max(0, t0 + i * 5 - performance.now())));
      const started = performance.now();
      const res = await fetch(endpointUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i }) });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`request ${i}: ${res.status}`);
      ms[i] = performance.now() - started;
    }));
    const of = (values: number[]) => ({ median: median(values), max: Math.max(...values) });
    return { first: of(ms.slice(0, 50)), last: of(ms.slice(-50)), rssMb };
  } finally {
    await server.stop();
    await receiver.stop();
  }
}
