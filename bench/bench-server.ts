import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');

/** The built server in a child process on a free port with a temp data dir, for benchmarks. */
export interface BenchServer {
  proc: ChildProcess;
  url: string;
  key: string;
  post(path: string, body: unknown): Promise<Record<string, any>>;
  stop(): Promise<void>;
}

/** `dataDir`: a data directory prepared beforehand (accounts made by the admin command); removed at stop like a fresh one. */
export async function startBenchServer(env: Record<string, string> = {}, dataDir: string = mkdtempSync(join(tmpdir(), 'sluice-bench-'))): Promise<BenchServer> {
  const key = 'sk_bench_0123456789abcdef';
  const nodeArgs = process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : [];
  const proc = spawn(process.execPath, ['--no-warnings=ExperimentalWarning', ...nodeArgs, join(ROOT, 'dist/src/main.js')], {
    env: { ...process.env, PORT: '0', SLUICE_DATA_DIR: dataDir, SLUICE_API_KEY: key, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const url = await new Promise<string>((res, rej) => {
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) res(m[1]);
    });
    proc.on('exit', (c) => rej(new Error(`server exited ${c}: ${out}`)));
  });
  return {
    proc, url, key,
    async post(path, body) {
      const r = await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = (await r.json()) as { data: Record<string, any>; error?: string };
      if (r.status !== 200) throw new Error(`${path}: ${r.status} ${json.error}`);
      return json.data;
    },
    async stop() {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
