import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SERVER_NODE_FLAGS } from '../src/server-node-flags';

const ROOT = resolve(__dirname, '..', '..');

/** The built server in a child process on a free port with a temp data dir, for benchmarks. */
export interface BenchServer {
  proc: ChildProcess;
  url: string;
  key: string;
  dataDir: string;
  post(path: string, body: unknown): Promise<Record<string, any>>;
  /** SIGTERM, then removes the data dir. */
  stop(): Promise<void>;
  /** SIGKILL (no shutdown code runs) and keeps the data dir, for checks of what was durable; `removeDataDir()` after. */
  kill(): Promise<void>;
  removeDataDir(): void;
}

/** The URL a child prints as `listening on <url>`; rejects with what it printed if it exits first. */
function listeningUrl(proc: ChildProcess, what: string): Promise<string> {
  let out = '';
  return new Promise<string>((res, rej) => {
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) res(m[1]);
    });
    proc.on('exit', (c) => rej(new Error(`${what} exited ${c}: ${out}`)));
  });
}

/** A plain child process started the same way (for the floor forwarder), with the URL it printed. */
export async function startBenchProcess(script: string, env: Record<string, string>): Promise<{ proc: ChildProcess; url: string; stop(): Promise<void> }> {
  const proc = spawn(process.execPath, [script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await listeningUrl(proc, script);
  return {
    proc, url,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    },
  };
}

/**
 * Starts `dist/src/main.js` with PORT=0 and `env`; resolves once it listens. `dataDir`: a data
 * directory prepared beforehand (accounts made by the admin command), removed at stop like the
 * fresh temporary one used otherwise; `extraNodeArgs`: node flags (a profiler, a probe); `root`:
 * another checkout whose built server to start (an A/B comparison); by default
 * `BENCH_SERVER_ROOT` when set (a "before" table: an older build measured by this harness), else
 * this checkout.
 */
export async function startBenchServer(
  env: Record<string, string> = {},
  opts: { dataDir?: string; extraNodeArgs?: string[]; root?: string; wrapper?: string[] } = {},
): Promise<BenchServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'sluice-bench-'));
  const extraNodeArgs = opts.extraNodeArgs ?? [];
  const key = 'sk_bench_0123456789abcdef';
  const nodeArgs = [...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : []), ...extraNodeArgs];
  const args = ['--no-warnings=ExperimentalWarning', ...SERVER_NODE_FLAGS, ...nodeArgs, join(opts.root ?? process.env.BENCH_SERVER_ROOT ?? ROOT, 'dist/src/main.js')];
  // `wrapper`: a command the server runs under (valgrind), which execs node with the same pid.
  const [command, ...commandArgs] = opts.wrapper?.length ? [...opts.wrapper, process.execPath, ...args] : [process.execPath, ...args];
  const proc = spawn(command, commandArgs, {
    env: { ...process.env, PORT: '0', SLUICE_DATA_DIR: dataDir, SLUICE_API_KEY: key, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // `BENCH_SERVER_LOG=<file>`: the server's standard output copied there (with `BENCH_NODE_ARGS=--trace-gc`, say).
  if (process.env.BENCH_SERVER_LOG) proc.stdout!.pipe(createWriteStream(process.env.BENCH_SERVER_LOG, { flags: 'a' }));
  const url = await listeningUrl(proc, 'server');
  const exited = new Promise((r) => proc.once('exit', r));
  return {
    proc, url, key, dataDir,
    async post(path, body) {
      const r = await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = (await r.json()) as { data: Record<string, any>; error?: string };
      if (r.status !== 200) throw new Error(`${path}: ${r.status} ${json.error}`);
      return json.data;
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
    removeDataDir() {
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
