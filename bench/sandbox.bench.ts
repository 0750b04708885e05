import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { bundleComponent, PackageCache, SandboxInvocation, SandboxSupervisor } from '@app/sandbox';

const TRIVIAL = (n: number) => `// component ${n}
export default {
  name: "bench-${n}",
  version: "1.0.0",
  props: { db: "$.service.db" },
  async run(event) {
    this.$emit({ n: event.n }, { id: event.n, summary: "bench" });
  },
};`;

// Exact versions: once installed, bundling needs no registry at all.
const WITH_PACKAGES = (n: number) => `// component ${n}
import _ from "lodash@4.17.21";
import dayjs from "dayjs@1.11.13";
export default {
  name: "bench-packages-${n}",
  version: "1.0.0",
  run(event) {
    return { sum: _.sum([event.n, 1]), year: dayjs(0).year() };
  },
};`;

// The Node built-ins the sandbox serves from shims and npm polyfills, each used, so that all of
// them are bundled and evaluated.
const WITH_BUILTINS = (n: number) => `// component ${n}
import { Buffer } from "buffer";
import { EventEmitter } from "events";
import util from "util";
import path from "path";
import url from "url";
import querystring from "querystring";
export default {
  name: "bench-builtins-${n}",
  version: "1.0.0",
  run(event) {
    const emitter = new EventEmitter();
    let seen = 0;
    emitter.on("n", (v) => (seen = v));
    emitter.emit("n", event.n);
    return {
      b64: Buffer.from(String(seen)).toString("base64"),
      text: util.format("%s:%d", "n", event.n),
      file: path.join("/a", "b", "..", "c.txt"),
      host: url.parse("http://example.com:8080/x?y=1").host,
      query: querystring.stringify({ n: event.n }),
    };
  },
};`;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function rssMb(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

async function trivialInvocation(n: number): Promise<SandboxInvocation> {
  const { bundle, codeHash } = await bundleComponent(TRIVIAL(n));
  return { codeId: codeHash, instanceId: `bench-${n}`, bundle, entry: 'run', event: { n }, props: {}, dbProps: ['db'], db: {} };
}

async function expectOk(supervisor: SandboxSupervisor, inv: SandboxInvocation): Promise<void> {
  const result = await supervisor.invoke(inv);
  if (!result.ok) throw new Error(`bench invocation failed: ${result.error?.name}: ${result.error?.message}`);
}

/**
 * Deploys of new code importing lodash and dayjs once both are in the package cache: bundle time
 * (ms, median) and the first invocation of that bundle (ms, median). The one install beforehand
 * needs the npm registry and is not measured.
 */
async function benchPackagedDeploys(supervisor: SandboxSupervisor, figures: Record<string, number>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-packages-'));
  try {
    const packageCache = new PackageCache(dir);
    await bundleComponent(WITH_PACKAGES(0), { packageCache });
    const bundleMs: number[] = [];
    const invokeMs: number[] = [];
    for (let n = 1; n <= 11; n++) {
      let t = performance.now();
      const { bundle, codeHash } = await bundleComponent(WITH_PACKAGES(n), { packageCache });
      bundleMs.push(performance.now() - t);
      t = performance.now();
      await expectOk(supervisor, { codeId: codeHash, instanceId: `bench-packaged-${n}`, bundle, entry: 'run', event: { n }, props: {} });
      invokeMs.push(performance.now() - t);
    }
    figures.coldDeployBundleMsLodashDayjsWarmCache = median(bundleMs);
    figures.coldInvokeMsLodashDayjs = median(invokeMs);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Components importing the Node built-ins served by shims and polyfills (buffer, events, util,
 * path, url, querystring): bundle time (ms, median of 11), first invocation (ms, median of 11), warm
 * invocation (us, median of 2000), and worker RSS per warm such component (MB, 50 components).
 */
async function benchBuiltins(figures: Record<string, number>): Promise<void> {
  const invocation = async (n: number): Promise<SandboxInvocation> => {
    const { bundle, codeHash } = await bundleComponent(WITH_BUILTINS(n));
    return { codeId: codeHash, instanceId: `bench-builtins-${n}`, bundle, entry: 'run', event: { n }, props: {} };
  };
  const single = new SandboxSupervisor({ workers: 1, egress: { allow: [] } });
  await single.start();
  try {
    const first = await invocation(0);
    figures.builtinsBundleBytes = first.bundle.length;
    await expectOk(single, first);
    const bundleMs: number[] = [];
    const coldMs: number[] = [];
    for (let n = 1; n <= 11; n++) {
      let t = performance.now();
      const inv = await invocation(n);
      bundleMs.push(performance.now() - t);
      t = performance.now();
      await expectOk(single, inv);
      coldMs.push(performance.now() - t);
    }
    figures.builtinsBundleMs = median(bundleMs);
    figures.builtinsColdInvokeMs = median(coldMs);
    for (let i = 0; i < 300; i++) await expectOk(single, { ...first, event: { n: i } });
    const latencies: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const t = performance.now();
      await expectOk(single, { ...first, event: { n: i } });
      latencies.push((performance.now() - t) * 1000);
    }
    figures.builtinsWarmInvokeUs = median(latencies);
    const components = await Promise.all(Array.from({ length: 50 }, (_, n) => invocation(100 + n)));
    const before = rssMb(single.workerPids()[0]);
    for (const inv of components) await expectOk(single, inv);
    const after = rssMb(single.workerPids()[0]);
    figures.builtinsWorkerRssMbPerWarmComponent = (after - before) / components.length;
  } finally {
    await single.stop();
  }
}

/**
 * Sandbox figures: cold start of a trivial component (ms, median), warm invocation latency one at
 * a time end to end through a worker (us, median), pipelined invocations per second through one
 * worker and through all workers, worker RSS per warm trivial component (MB, 100 components), and
 * deploys of code importing lodash and dayjs from a warm package cache, and components importing
 * the Node built-ins (see benchBuiltins).
 */
export async function benchSandbox(): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  const supervisor = new SandboxSupervisor({ workers: 2, egress: { allow: [] } });
  await supervisor.start();
  try {
    const cold: number[] = [];
    for (let n = 0; n < 21; n++) {
      const inv = await trivialInvocation(1000 + n);
      const t = performance.now();
      await expectOk(supervisor, inv);
      cold.push(performance.now() - t);
    }
    figures.coldInvokeMs = median(cold);

    const warm = await trivialInvocation(1);
    for (let i = 0; i < 500; i++) await expectOk(supervisor, { ...warm, event: { n: i } });
    const latencies: number[] = [];
    for (let i = 0; i < 3000; i++) {
      const t = performance.now();
      await expectOk(supervisor, { ...warm, event: { n: i } });
      latencies.push((performance.now() - t) * 1000);
    }
    figures.warmInvokeUs = median(latencies);

    const total = 20_000;
    let t = performance.now();
    await Promise.all(Array.from({ length: total }, (_, i) => expectOk(supervisor, { ...warm, event: { n: i } })));
    figures.pipelinedPerSecOneWorker = total / ((performance.now() - t) / 1000);

    const spread = [warm];
    for (let n = 2; spread.length < 2; n++) {
      const inv = await trivialInvocation(n);
      if (supervisor.workerIndexFor(inv.codeId) !== supervisor.workerIndexFor(warm.codeId)) spread.push(inv);
    }
    await expectOk(supervisor, spread[1]);
    t = performance.now();
    await Promise.all(Array.from({ length: total }, (_, i) => expectOk(supervisor, { ...spread[i % 2], event: { n: i } })));
    figures.pipelinedPerSecAllWorkers = total / ((performance.now() - t) / 1000);

    await benchPackagedDeploys(supervisor, figures);
  } finally {
    await supervisor.stop();
  }

  const single = new SandboxSupervisor({ workers: 1, egress: { allow: [] } });
  await single.start();
  try {
    const components = await Promise.all(Array.from({ length: 100 }, (_, n) => trivialInvocation(5000 + n)));
    await expectOk(single, await trivialInvocation(4999));
    const before = rssMb(single.workerPids()[0]);
    for (const inv of components) await expectOk(single, inv);
    const after = rssMb(single.workerPids()[0]);
    figures.workerRssMbPer100Warm = after - before;
    figures.workerRssMbPerWarmComponent = (after - before) / components.length;
  } finally {
    await single.stop();
  }
  await benchBuiltins(figures);
  return figures;
}
