import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBenchServer } from './bench-server';
import { BenchReceiver, LoadGenerator, percentile, phaseLine, sourcePipeline } from './e2e.bench';

/** One record of `probe/stall-recorder.ts`: what held the server's loop, from `start` for `ms`. */
interface Hold {
  kind: string;
  start: number;
  ms: number;
}

function readHolds(file: string): Hold[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter(Boolean).map((line) => {
    const [kind, start, ms] = line.split(' ');
    return { kind, start: Number(start), ms: Number(ms) };
  });
}

/**
 * What the slowest requests of the e2e pipeline waited for (issue 10's p99). The server runs
 * with `probe/stall-recorder.js` (loop stalls, GC pauses, long commits and fsyncs on the wall
 * clock); the load generator sends `BENCH_STALL_RATE` requests a second (default 1,000) for
 * `BENCH_SECONDS` (default 15) after a 5 s warm-up at that rate (none with `BENCH_STALL_WARMUP=0`). Prints the latencies, what held
 * the loop (count, total, longest, and the median interval between long commits, which is the
 * checkpoints' period), and how many of the requests over 0.8 times the p99 were in flight while
 * each kind of hold happened. A diagnosis, not a figure of the table: the recorder's timer and
 * wrappers cost a little CPU themselves.
 */
export async function benchStalls(log: (s: string) => void): Promise<void> {
  const rate = Number(process.env.BENCH_STALL_RATE ?? 1000);
  const seconds = Number(process.env.BENCH_SECONDS ?? 15);
  const dir = mkdtempSync(join(tmpdir(), 'sluice-stalls-'));
  const stallFile = join(dir, 'stalls.txt');
  const receiver = new BenchReceiver();
  receiver.keepReceipts = false;
  const receiverUrl = await receiver.start();
  const server = await startBenchServer({ SLUICE_EGRESS_ALLOW: '127.0.0.1', STALL_FILE: stallFile }, {
    extraNodeArgs: ['--require', join(__dirname, 'probe', 'stall-recorder.js')],
  });
  try {
    const wh = await server.post('/v1/webhooks', { url: receiverUrl, name: 'bench', description: '' });
    const { endpointUrl } = await sourcePipeline(server.post, wh.id as string);
    const generator = new LoadGenerator({ pid: server.proc.pid!, endpointUrl }, receiver);
    try {
      // BENCH_STALL_WARMUP=0: the measured phase starts right after the server did (its first seconds).
      if (process.env.BENCH_STALL_WARMUP !== '0') {
        await generator.run({ label: 'warm-up', rate: 200, seconds: 2 });
        log(phaseLine(await generator.run({ label: `warm-up ${rate}/s x 5 s`, rate, seconds: 5 })));
      }
      const first = generator.next;
      log(phaseLine(await generator.run({ label: `${rate}/s x ${seconds} s`, rate, seconds })));
      // The recorder writes its file every second.
      await new Promise((r) => setTimeout(r, 1500));
      const receipts = generator.receipts(first, generator.next);
      if (receipts.length === 0) {
        log('  no receipts');
        return;
      }
      const latencies = receipts.map((r) => r.receivedAt - r.sentAt).sort((a, b) => a - b);
      const p99 = percentile(latencies, 99);
      const from = receipts[0].sentAt;
      const to = Math.max(...receipts.map((r) => r.receivedAt));
      const holds = readHolds(stallFile).filter((h) => h.start + h.ms >= from && h.start <= to);
      const window = (to - from) / 1000;
      log(`  request -> receipt: p50 ${percentile(latencies, 50).toFixed(1)} ms, p95 ${percentile(latencies, 95).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms over ${receipts.length} requests`);
      // Where in the phase the slow ones were sent: latencies grouped by when they were sent (a
      // cold start's backlog shows as its first second), each group sorted.
      const sentIn = (bucketMs: number, buckets: number) => {
        const groups = new Map<number, number[]>();
        for (const r of receipts) {
          const b = Math.floor((r.sentAt - from) / bucketMs);
          if (b >= buckets) continue;
          if (!groups.has(b)) groups.set(b, []);
          groups.get(b)!.push(r.receivedAt - r.sentAt);
        }
        return [...groups].sort((a, b) => a[0] - b[0]).map(([, l]) => l.sort((a, b) => a - b));
      };
      log(`  p99 by second sent (ms): ${sentIn(1000, 20).map((l) => percentile(l, 99).toFixed(1)).join(', ')}`);
      log(`  the first second by tenths, p50 / max (ms): ${sentIn(100, 10).map((l) => `${percentile(l, 50).toFixed(0)}/${l[l.length - 1].toFixed(0)}`).join(', ')}`);
      const slow = receipts.filter((r) => r.receivedAt - r.sentAt > 0.8 * p99);
      for (const kind of ['stall', 'gc', 'commit', 'fsync']) {
        const of = holds.filter((h) => h.kind === kind);
        const total = of.reduce((s, h) => s + h.ms, 0);
        const longest = of.reduce((m, h) => Math.max(m, h.ms), 0);
        const during = slow.filter((r) => of.some((h) => h.start < r.receivedAt && h.start + h.ms > r.sentAt)).length;
        let period = '';
        if (kind === 'commit') {
          const long = of.filter((h) => h.ms > 3).map((h) => h.start);
          const gaps = long.slice(1).map((t, i) => t - long[i]).sort((a, b) => a - b);
          if (gaps.length > 0) period = `, commits over 3 ms every ${(percentile(gaps, 50) / 1000).toFixed(2)} s (median)`;
        }
        const over = (ms: number) => of.filter((h) => h.ms > ms).length;
        log(`  ${kind.padEnd(6)} ${String(of.length).padStart(5)} over the threshold (${(of.length / window).toFixed(1)}/s), ${total.toFixed(0)} ms in all (${((100 * total) / (to - from)).toFixed(1)}% of the time), longest ${longest.toFixed(1)} ms, over 3 / 5 / 10 ms ${over(3)} / ${over(5)} / ${over(10)}${period}; ${during} of the ${slow.length} requests over 0.8 x p99 were in flight during one`);
      }
    } finally {
      generator.close();
    }
  } finally {
    await server.stop();
    await receiver.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
