import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';

// Every isolate created from now on has a global `gc()`: the bench components call it at the end
// of each run, so the heap figure is what a warm isolate really keeps, not garbage not yet collected.
setFlagsFromString('--expose-gc');

// A child process of the `node-surface` bench part (node-surface.bench.ts), started with
// `node --no-node-snapshot` as sandbox workers are. It loads the compiled sandbox from the
// directory given as its first argument, so the same probe measures the current build and an
// earlier one (the "before" figures). It prints one JSON line of figures per component:
// bundle size, cold start (new isolate + load + first run, ms) and the heap a warm isolate keeps
// between runs (used heap plus external allocations, bytes), medians over `runs` isolates.
//
// Arguments: <sandbox dist dir> <package cache dir> <components JSON: {name: code}> <runs>

interface SandboxModules {
  bundleComponent(code: string, opts: { packageCache: unknown }): Promise<{ bundle: string }>;
  PackageCache: new (dir: string) => unknown;
  ComponentIsolate: new (memoryMb: number, deps: unknown, instanceId: string) => ProbeIsolate;
  InvocationRun: new (seq: number, limits: unknown) => unknown;
  guestPreludeSource(): string;
}

interface ProbeIsolate {
  attach(run: unknown): void;
  detach(run: unknown): void;
  load(bundle: string, run: unknown): Promise<{ message: string } | null>;
  invoke(inv: unknown, run: unknown): Promise<{ ok: boolean; error?: { message: string } }>;
  heapBytes(): number | null;
  dispose(): void;
}

const LIMITS = { memoryMb: 128, timeoutMs: 30_000, cpuMs: 30_000 };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function main(): Promise<void> {
  const [dir, cacheDir, componentsJson, runsText] = process.argv.slice(2);
  const load = (file: string) => require(join(dir, file)) as Partial<SandboxModules>;
  const sandbox = {
    ...load('index.js'),
    ...load('component.isolate.js'),
    ...load('invocation.run.js'),
    ...load('guest-prelude.loader.js'),
  } as SandboxModules;
  const packageCache = new sandbox.PackageCache(cacheDir);
  const prelude = { source: sandbox.guestPreludeSource() };
  const refused = () => Promise.reject(new Error('no network in the probe'));
  const deps = { prelude, egress: refused, streamEgress: refused };
  const runs = Number(runsText);
  let seq = 0;
  const once = async (isolate: ProbeIsolate, work: (run: unknown) => Promise<unknown>): Promise<unknown> => {
    const run = new sandbox.InvocationRun(++seq, LIMITS);
    isolate.attach(run);
    try {
      return await work(run);
    } finally {
      isolate.detach(run);
    }
  };
  const figures: Record<string, Record<string, number | string>> = {};
  const failures: Record<string, string> = {};
  for (const [name, code] of Object.entries(JSON.parse(componentsJson) as Record<string, string>)) {
    // Workers receive bundles over JSON IPC, as a freshly parsed string: the same here, so the
    // isolate gets the string in the form a worker would give it.
    const bundle = JSON.parse(JSON.stringify((await sandbox.bundleComponent(code, { packageCache })).bundle)) as string;
    const coldMs: number[] = [];
    const heapBytes: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      const isolate = new sandbox.ComponentIsolate(LIMITS.memoryMb, deps, `probe-${name}-${i}`);
      const loadError = (await once(isolate, (run) => isolate.load(bundle, run))) as { message: string } | null;
      if (loadError) throw new Error(`${name} did not load: ${loadError.message}`);
      const invocation = { codeId: name, instanceId: `probe-${name}-${i}`, bundle: '', entry: 'run', event: { n: 0 }, props: {} };
      const first = (await once(isolate, (run) => isolate.invoke(invocation, run))) as { ok: boolean; error?: { message: string } };
      // An earlier build may not run the component (that is what the Node surface fixed): its
      // figures are still those of a loaded isolate, and the failure is reported beside them.
      if (!first.ok) failures[name] = first.error?.message ?? 'failed';
      coldMs.push(performance.now() - t);
      for (let n = 1; n <= 3; n++) await once(isolate, (run) => isolate.invoke({ ...invocation, event: { n } }, run));
      heapBytes.push(isolate.heapBytes() ?? 0);
      isolate.dispose();
    }
    figures[name] = { bundleBytes: bundle.length, coldStartMs: median(coldMs), warmHeapBytes: median(heapBytes) };
    if (failures[name]) figures[name].runFailed = failures[name];
  }
  process.stdout.write(`${JSON.stringify(figures)}\n`);
  // isolated-vm 5 can crash at exit while V8's code cache of the prelude is still held.
  (prelude as { cachedData?: { release(): void } }).cachedData?.release();
}

main().then(() => process.exit(0), (error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
