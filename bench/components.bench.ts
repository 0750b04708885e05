import { Agent, request } from 'node:http';
import { startBenchServer } from './bench-server';
import { treeRssMb } from './e2e.bench';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/**
 * Component costs through the real server: deploy time (trivial, and lodash+dayjs from a warm
 * package cache), warm invocation round trip and rate of a trivial custom-response source, and
 * RSS per 100 deployed idle sources.
 */
export async function benchComponents(log: (s: string) => void): Promise<void> {
  const server = await startBenchServer();
  const { proc, post } = server;
  try {
    const trivial = (i: number) => `export default { name: "t${i}", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
      run(e) { this.http.respond({ status: 200, body: "ok" }); } }`;
    const deployMs: number[] = [];
    for (let i = 0; i < 15; i++) {
      const t0 = performance.now();
      await post('/v1/sources', { component_code: trivial(i) });
      deployMs.push(performance.now() - t0);
    }
    log(`  deploy of a trivial source (new code each time, median of 15): ${median(deployMs).toFixed(1)} ms`);

    const withPackages = (i: number) => `import _ from "lodash@4.17.21"; import dayjs from "dayjs@^1.11.0";
      export default { name: "p${i}", version: "1", props: { http: { type: "$.interface.http" } },
      run(e) { this.$emit({ n: _.sum([1, 2, ${i}]), d: dayjs(0).year() }); } }`;
    try {
      await post('/v1/sources', { component_code: withPackages(0) });
      const pkgMs: number[] = [];
      for (let i = 1; i <= 7; i++) {
        const t0 = performance.now();
        await post('/v1/sources', { component_code: withPackages(i) });
        pkgMs.push(performance.now() - t0);
      }
      log(`  deploy importing lodash+dayjs, packages cached (median of 7): ${median(pkgMs).toFixed(1)} ms`);
    } catch (err) {
      log(`  deploy importing lodash+dayjs: not measured (${(err as Error).message.slice(0, 120)})`);
    }

    const src = await post('/v1/sources', { component_code: trivial(999) });
    const ep = new URL(src.endpoint_url as string);
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const hit = () => new Promise<void>((res, rej) => {
      const req = request({ host: ep.hostname, port: ep.port, path: ep.pathname, method: 'GET', agent }, (r) => {
        r.resume();
        r.on('end', () => res());
      });
      req.on('error', rej);
      req.end();
    });
    for (let i = 0; i < 200; i++) await hit();
    const lat: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const t0 = performance.now();
      await hit();
      lat.push(performance.now() - t0);
    }
    log(`  warm invocation round trip through the server, one at a time (median of 1000): ${(median(lat) * 1000).toFixed(0)} us`);
    const t0 = performance.now();
    let n = 0;
    await Promise.all([...Array(32)].map(async () => {
      while (performance.now() - t0 < 3000) {
        await hit();
        n++;
      }
    }));
    log(`  invocations/s of one trivial HTTP source (32 concurrent, custom response): ${Math.round(n / ((performance.now() - t0) / 1000))}`);
    agent.destroy();

    const before = treeRssMb(proc.pid!);
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push((await post('/v1/sources', { component_code: trivial(1000 + i) })).endpoint_url as string);
    for (const e of ids) await fetch(e);
    await new Promise((r) => setTimeout(r, 1000));
    const after = treeRssMb(proc.pid!);
    log(`  RSS per deployed idle source (100 sources, each invoked once): ${((after - before) / 100).toFixed(2)} MB (server tree ${before.toFixed(0)} -> ${after.toFixed(0)} MB)`);
  } finally {
    await server.stop();
  }
}
