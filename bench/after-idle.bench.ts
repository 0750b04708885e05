import { startBenchServer } from './bench-server';
import { BenchReceiver, median, processRssMb, sourcePipeline } from './e2e.bench';

/** The flag measured here. */
const FLAG = '--no-flush-bytecode';

type Where = 'server' | 'worker';
interface Timing { median: number; max: number }
interface Run { first: Timing; last: Timing; firstReceipt: Timing; lastReceipt: Timing; rssMb: number }

/**
 * The first requests after a server sat idle (`BENCH_ONLY=afteridle`): a source and a webhook
 * deployed, `BENCH_AFTER_IDLE_SECONDS` (default 55, about what the e2e table's idle figures take
 * before its first load) of quiet, then 400 requests at 200/s, each timed from its request to its
 * 200 and to its delivery's receipt. Run `BENCH_AFTER_IDLE_PAIRS` times (default 2) with and
 * without `--no-flush-bytecode`, alternated (V8 drops the bytecode of functions that have not run
 * for a few major collections; an idle process makes such collections). `BENCH_AFTER_IDLE_WHERE`
 * says whose flag: `server` (default; the side without it adds `--flush-bytecode` after the
 * server's own flags) or `worker` (the server keeps its flags on both sides; the side with it
 * gives the sandbox workers the flag through `SLUICE_SANDBOX_WORKER_EXEC_ARGV`). Prints, per run,
 * the median and the slowest of the first 50 requests and of the last 50, to the 200 and to the
 * receipt, and the server's RSS after the deploys; then the medians over the pairs.
 */
export async function benchAfterIdle(log: (s: string) => void): Promise<void> {
  const idleSeconds = Number(process.env.BENCH_AFTER_IDLE_SECONDS ?? 55);
  const pairs = Number(process.env.BENCH_AFTER_IDLE_PAIRS ?? 2);
  const where: Where = process.env.BENCH_AFTER_IDLE_WHERE === 'worker' ? 'worker' : 'server';
  const firsts = new Map<string, { answer: number[]; receipt: number[] }>([['with', { answer: [], receipt: [] }], ['without', { answer: [], receipt: [] }]]);
  const fmt = (t: Timing) => `${t.median.toFixed(1)} ms (slowest ${t.max.toFixed(1)})`;
  log(`  the ${where}'s ${FLAG}, ${pairs} pair(s) alternated, ${idleSeconds} s idle before each load`);
  for (let pair = 0; pair < pairs; pair++) {
    for (const side of pair % 2 === 0 ? ['without', 'with'] : ['with', 'without']) {
      const run = await firstRequests(idleSeconds, where, side === 'with');
      firsts.get(side)!.answer.push(run.first.median);
      firsts.get(side)!.receipt.push(run.firstReceipt.median);
      log(`  ${side.padEnd(7)} ${FLAG}: first 50 requests to the 200 ${fmt(run.first)}, to the receipt ${fmt(run.firstReceipt)}; last 50 to the 200 ${fmt(run.last)}, to the receipt ${fmt(run.lastReceipt)}; server RSS after the deploys ${run.rssMb.toFixed(1)} MB`);
    }
  }
  for (const what of ['answer', 'receipt'] as const) {
    const withFlag = median(firsts.get('with')![what]);
    const without = median(firsts.get('without')![what]);
    log(`  first 50 requests after ${idleSeconds} s idle, to the ${what === 'answer' ? '200' : 'receipt'}, median of ${pairs} run(s) a side: with ${withFlag.toFixed(1)} ms, without ${without.toFixed(1)} ms (with / without ${(withFlag / without).toFixed(2)}x)`);
  }
}

async function firstRequests(idleSeconds: number, where: Where, withFlag: boolean): Promise<Run> {
  const receiver = new BenchReceiver();
  receiver.keepReceipts = false;
  const url = await receiver.start();
  // The server's flag is among its own (SERVER_NODE_FLAGS); a later `--flush-bytecode` undoes it.
  const env: Record<string, string> = { SLUICE_EGRESS_ALLOW: '127.0.0.1' };
  if (where === 'worker' && withFlag) env.SLUICE_SANDBOX_WORKER_EXEC_ARGV = FLAG;
  const server = await startBenchServer(env, { extraNodeArgs: where === 'server' && !withFlag ? ['--flush-bytecode'] : [] });
  try {
    const wh = await server.post('/v1/webhooks', { url, name: 'bench', description: '' });
    const { endpointUrl } = await sourcePipeline(server.post, wh.id as string);
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    const rssMb = processRssMb(server.proc.pid!);
    const n = 400;
    const ms: number[] = new Array(n);
    const sentAt: number[] = new Array(n);
    const t0 = performance.now();
    await Promise.all(Array.from({ length: n }, async (_, i) => {
      await new Promise((r) => setTimeout(r, Math.max(0, t0 + i * 5 - performance.now())));
      const started = performance.now();
      sentAt[i] = performance.timeOrigin + started;
      const res = await fetch(endpointUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i }) });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`request ${i}: ${res.status}`);
      ms[i] = performance.now() - started;
    }));
    const deadline = Date.now() + 30_000;
    while (receiver.firstAt.size < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    if (receiver.firstAt.size < n) throw new Error(`only ${receiver.firstAt.size} of ${n} deliveries received within 30 s`);
    const toReceipt = sentAt.map((at, i) => receiver.firstAt.get(i)! - at);
    const of = (values: number[]): Timing => ({ median: median(values), max: Math.max(...values) });
    return { first: of(ms.slice(0, 50)), last: of(ms.slice(-50)), firstReceipt: of(toReceipt.slice(0, 50)), lastReceipt: of(toReceipt.slice(-50)), rssMb };
  } finally {
    await server.stop();
    await receiver.stop();
  }
}
