import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const TRIVIAL = `export default {
  name: "bench-trivial",
  version: "1.0.0",
  run(event) {
    globalThis.gc?.();
    return { n: event.n };
  },
};`;

// Exact versions: once installed, bundling needs no registry. The run touches both packages
// (a parser and axios's config merge) without a network request, so both are evaluated. Each run
// ends with `gc()` where the probe exposes it (isolate-memory.probe.ts), so the heap measured
// after it is live memory.
const AXIOS = `import axios from "axios@1.21.1";
export default {
  name: "bench-axios",
  version: "1.0.0",
  run(event) {
    const client = axios.create({ baseURL: "https://example.com", timeout: 1000 });
    globalThis.gc?.();
    return { n: event.n, base: client.defaults.baseURL };
  },
};`;

const AXIOS_FEEDPARSER = `import axios from "axios@1.21.1";
import FeedParser from "feedparser@2.6.0";
export default {
  name: "bench-axios-feedparser",
  version: "1.0.0",
  run(event) {
    const parser = new FeedParser({ addmeta: false });
    const client = axios.create({ baseURL: "https://example.com", timeout: 1000 });
    globalThis.gc?.();
    return { n: event.n, parser: typeof parser.pipe, base: client.defaults.baseURL };
  },
};`;

/**
 * Runs the probe and returns its output. isolated-vm 5 sometimes crashes while the probe process
 * exits (SIGSEGV after its figures are written, with --expose-gc); figures written before that
 * are complete, so they are kept.
 */
async function probe(dir: string, cacheDir: string, components: string, runs: string): Promise<string> {
  try {
    return (await run(process.execPath, ['--no-node-snapshot', join(__dirname, 'isolate-memory.probe.js'), dir, cacheDir, components, runs], { maxBuffer: 1 << 20 })).stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    if (stdout && stdout.trim().startsWith('{')) return stdout;
    throw new Error(`the isolate memory probe failed: ${stderr ?? String(error)}`);
  }
}

/** Where the compiled sandbox of this build is (this file runs from dist/bench). */
const CURRENT_SANDBOX_DIST = join(__dirname, '..', 'libs', 'sandbox', 'src');

/**
 * Warm isolate memory and cold start of a trivial component and of one importing axios and a feed
 * parser, measured by isolate-memory.probe (a `--no-node-snapshot` child, as workers are) on this
 * build and, when `BENCH_BEFORE_SANDBOX_DIST` names the compiled sandbox of an earlier build
 * (`<dist>/libs/sandbox/src`), on that one too: the before/after of the Node surface.
 */
export async function benchNodeSurface(print: (line: string) => void): Promise<void> {
  const cacheDir = mkdtempSync(join(tmpdir(), 'sluice-bench-node-surface-'));
  const runs = process.env.BENCH_NODE_SURFACE_RUNS ?? '11';
  const components = JSON.stringify({ trivial: TRIVIAL, axios: AXIOS, axiosFeedparser: AXIOS_FEEDPARSER });
  const builds: Array<[string, string]> = [['current', CURRENT_SANDBOX_DIST]];
  if (process.env.BENCH_BEFORE_SANDBOX_DIST) builds.unshift(['before', process.env.BENCH_BEFORE_SANDBOX_DIST]);
  try {
    for (const [label, dir] of builds) {
      const stdout = await probe(dir, cacheDir, components, runs);
      const figures = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as Record<string, { warmHeapBytes: number; coldStartMs: number; bundleBytes: number; runFailed?: string }>;
      for (const [name, f] of Object.entries(figures)) {
        const failed = f.runFailed ? ` (its run fails: ${f.runFailed})` : '';
        print(`  ${label} ${name}: warm isolate heap ${(f.warmHeapBytes / 1024 / 1024).toFixed(2)} MB, cold start ${f.coldStartMs.toFixed(1)} ms, bundle ${(f.bundleBytes / 1024).toFixed(0)} KB${failed}`);
      }
    }
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
}
