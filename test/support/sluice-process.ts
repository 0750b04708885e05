import { ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { SERVER_NODE_FLAGS } from '../../src/server-node-flags';

const ROOT = resolve(__dirname, '..', '..');
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const CLI = join(ROOT, 'dist', 'apps', 'cli', 'main.js');

/** A Sluice server running as a real child process on a real port. */
export interface SluiceProcess {
  url: string;
  apiKey: string;
  dataDir: string;
  proc: ChildProcess;
  output(): string;
  /** Graceful stop (SIGTERM). */
  stop(): Promise<void>;
  /** Crash (SIGKILL): no shutdown code runs. */
  kill(): Promise<void>;
}

export function newDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'sluice-e2e-'));
}

export function removeDataDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Env every test server gets: loopback allowed for webhook deliveries (not for component code:
 * tests that fetch from components set SLUICE_COMPONENT_EGRESS_ALLOW), fast retries, small limits.
 */
export function testEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    SLUICE_EGRESS_ALLOW: '127.0.0.1',
    SLUICE_RETRY_SCHEDULE: '0,0.2,0.2,0.3,0.3,0.5,0.5,1',
    SLUICE_DELIVERY_TIMEOUT_MS: '2000',
    SLUICE_SANDBOX_TIMEOUT_MS: '2000',
    SLUICE_SANDBOX_WORKERS: '2',
    ...extra,
  };
}

/**
 * Starts `node dist/src/main.js` (what `npm start` runs) with PORT=0 and waits for it to listen.
 * `nodeArgs`: node flags after the server's own (a V8 log, a probe).
 */
export async function startSluice(opts: { dataDir?: string; env?: Record<string, string>; apiKey?: string; nodeArgs?: string[] } = {}): Promise<SluiceProcess> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build (npm test does it first)`);
  const dataDir = opts.dataDir ?? newDataDir();
  const apiKey = opts.apiKey ?? 'sk_test_e2e_key_0123456789';
  const env: NodeJS.ProcessEnv = {
    ...process.env, PORT: '0', HOST: '127.0.0.1', SLUICE_DATA_DIR: dataDir, SLUICE_API_KEY: apiKey, ...testEnv(opts.env),
  };
  // The caller's own shell must not leak in; a test may still set one.
  if (!opts.env?.SLUICE_PUBLIC_URL) delete env.SLUICE_PUBLIC_URL;
  const proc = spawn(process.execPath, ['--no-warnings=ExperimentalWarning', ...SERVER_NODE_FLAGS, ...(opts.nodeArgs ?? []), MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  let url: string;
  try {
    url = await new Promise<string>((resolveUrl, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start in 30 s:\n${out}`)), 30_000);
      const check = () => {
        const m = /listening on (http:\/\/[^\s]+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolveUrl(m[1]);
        }
      };
      proc.stdout!.on('data', check);
      proc.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`server exited with ${code}:\n${out}`));
      });
    });
  } catch (err) {
    // A start that failed leaves nothing behind: no process, and no data dir this call made.
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
    if (!opts.dataDir) removeDataDir(dataDir);
    throw err;
  }
  return {
    url, apiKey, dataDir, proc,
    output: () => out,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** Runs the admin CLI (`npm run admin -- ...`) against a data dir. */
export async function runAdmin(dataDir: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--no-warnings=ExperimentalWarning', CLI, ...args], {
    env: { ...process.env, SLUICE_DATA_DIR: dataDir, ...env },
  });
  return stdout;
}

/** A small REST client: JSON in, `{status, body}` out, never throws on HTTP errors. */
export function api(base: string, key: string) {
  const call = async (method: string, path: string, opts: { query?: Record<string, string>; body?: unknown; raw?: string; headers?: Record<string, string> } = {}) => {
    const u = new URL(path, base);
    for (const [k, v] of Object.entries(opts.query ?? {})) u.searchParams.set(k, v);
    const res = await fetch(u, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(opts.headers ?? {}) },
      body: opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)),
    });
    const text = await res.text();
    let body: any;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    return { status: res.status, body, headers: res.headers };
  };
  return {
    get: (path: string, query?: Record<string, string>) => call('GET', path, { query }),
    post: (path: string, body?: unknown, query?: Record<string, string>) => call('POST', path, { body, query }),
    put: (path: string, body?: unknown) => call('PUT', path, { body }),
    del: (path: string, query?: Record<string, string>) => call('DELETE', path, { query }),
    call,
  };
}

/** Polls until `fn` returns a truthy value or the time runs out (then throws with the last value). */
export async function eventually<T>(fn: () => Promise<T> | T, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < until) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(last)?.slice(0, 500)}`);
}

/**
 * POSTs a body and resolves with the response status and body even when the server answers
 * (e.g. 413 from the Content-Length) and closes before the upload is finished, which makes
 * `fetch` fail with EPIPE.
 */
export function postExpectingEarlyAnswer(url: string, body: string, headers: Record<string, string> = { 'content-type': 'text/plain' }): Promise<{ status: number; body: string; headers?: Record<string, unknown> }> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const http = require('node:http') as typeof import('node:http');
  return new Promise((resolveAnswer, reject) => {
    const req = http.request(url, { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolveAnswer({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
    });
    // The server may close before the upload ends; then the client can lose the answer too,
    // which is reported as status 0 (callers decide whether that is acceptable).
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE' || err.code === 'ECONNRESET') setTimeout(() => resolveAnswer({ status: 0, body: '' }), 2000);
      else reject(err);
    });
    req.end(body);
  });
}
