import { Agent, request } from 'node:http';
import { startBenchServer } from './bench-server';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/**
 * Prop configuration through the real server: options calls per second of a static async
 * options method (`async options() { return [...] }`) through `POST /v1/components/{id}/props/
 * {prop}/options`, one at a time and 16 concurrent; median of rounds of `BENCH_PROPS_SECONDS`
 * (default 2) each. Every call runs in the account's props isolate (warm after the first).
 */
export async function benchProps(log: (s: string) => void): Promise<void> {
  const server = await startBenchServer();
  try {
    const saved = await server.post('/v1/components', {
      component_code: `export default { name: "opts", version: "1",
        props: { color: { type: "string", async options({ page }) { return ["red", "green", "blue", "page " + page]; } } },
        async run() {} }`,
    });
    const url = new URL(`${server.url}/v1/components/${saved.id as string}/props/color/options`);
    const body = JSON.stringify({ configured_props: {}, page: 0 });
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const call = () => new Promise<void>((resolve, reject) => {
      const req = request({
        host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent,
        headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`options answered ${res.statusCode}`));
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end(body);
    });
    for (let i = 0; i < 300; i++) await call();
    const seconds = Number(process.env.BENCH_PROPS_SECONDS ?? 2);
    const rounds = Number(process.env.BENCH_PROPS_ROUNDS ?? 5);
    for (const concurrency of [1, 16]) {
      const rates: number[] = [];
      for (let r = 0; r < rounds; r++) {
        const t0 = performance.now();
        let n = 0;
        await Promise.all([...Array(concurrency)].map(async () => {
          while (performance.now() - t0 < seconds * 1000) {
            await call();
            n++;
          }
        }));
        rates.push(n / ((performance.now() - t0) / 1000));
      }
      log(`  options calls/s, static async options method via REST, ${concurrency} at a time (median of ${rounds} rounds of ${seconds} s): ${Math.round(median(rates))} (rounds: ${rates.map((x) => Math.round(x)).join(', ')})`);
    }
    agent.destroy();
  } finally {
    await server.stop();
  }
}
