import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');
/** The `pd` launcher that package.json's "bin" points at (what `npx pd` runs). */
export const PD = join(ROOT, 'bin', 'pd.js');

/** What a finished `pd` printed and its exit code. */
export interface PdResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The env `pd` runs with in tests: the caller's, without any Sluice settings or config file of
 * the machine (XDG_CONFIG_HOME points at a directory that does not exist unless given).
 */
export function pdEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: '/nonexistent-sluice-test-config', SLUICE_DATA_DIR: '/nonexistent-sluice-test-data' };
  for (const k of ['SLUICE_URL', 'SLUICE_API_KEY', 'SLUICE_PROFILE', 'PORT']) delete env[k];
  for (const [k, v] of Object.entries(extra)) if (v === undefined) delete env[k]; else env[k] = v;
  return env;
}

/** A running `pd` (for `-f` and `pd dev`): its output so far, and a way to wait for text in it. */
export interface PdProcess {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when `pattern` appears in stdout (or stderr with `where`), rejects when pd exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp | string, where?: 'stdout' | 'stderr', timeoutMs?: number): Promise<void>;
  /** Sends SIGINT (Ctrl-C) and resolves with the exit code. */
  interrupt(): Promise<number | null>;
  exited: Promise<number | null>;
}

/** Starts `node bin/pd.js ...args` with `env`. */
export function spawnPd(args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): PdProcess {
  if (!existsSync(join(ROOT, 'dist', 'apps', 'cli', 'main.js'))) throw new Error('dist is missing: run npm run build');
  const proc = spawn(process.execPath, [PD, ...args], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  const poke = () => waiters.forEach((w) => w());
  proc.stdout!.on('data', (d) => {
    out += d;
    poke();
  });
  proc.stderr!.on('data', (d) => {
    err += d;
    poke();
  });
  const exited = new Promise<number | null>((r) => proc.on('close', (code) => {
    poke();
    r(code);
  }));
  return {
    proc,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(pattern, where = 'stdout', timeoutMs = 30_000) {
      const test = () => {
        const text = where === 'stdout' ? out : err;
        return typeof pattern === 'string' ? text.includes(pattern) : pattern.test(text);
      };
      return new Promise<void>((resolveWait, reject) => {
        const check = () => {
          if (test()) {
            done();
            resolveWait();
          } else if (proc.exitCode !== null || proc.signalCode !== null) {
            done();
            reject(new Error(`pd exited (${proc.exitCode ?? proc.signalCode}) before ${pattern} appeared\nstdout: ${out}\nstderr: ${err}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for ${pattern} in pd's ${where}\nstdout: ${out}\nstderr: ${err}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async interrupt() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGINT');
      return exited;
    },
  };
}

/** Runs `pd ...args` to the end; never throws on a non-zero exit. */
export async function runPd(args: string[], env: NodeJS.ProcessEnv, opts: { cwd?: string; input?: string } = {}): Promise<PdResult> {
  const p = spawnPd(args, env, opts.cwd);
  p.proc.stdin!.end(opts.input ?? '');
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}
