import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, realpathSync } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { ComponentCodeError } from './component-code.error';
import { packageLabel, parsePackageSpecifier } from './package-specifier.parser';

/** Tunables of a PackageCache; the defaults suit a server. */
export interface PackageCacheOptions {
  /** The npm executable (default `npm` on the PATH). */
  npm?: string;
  /** Longest an `npm install` may take (default 120 s). */
  installTimeoutMs?: number;
  /** Longest a registry question (`npm view`) may take (default 60 s). */
  registryTimeoutMs?: number;
  /** How long the version a range resolved to is reused (default 10 min); exact versions never expire. */
  rangeTtlMs?: number;
}

interface NpmOutcome {
  ok: boolean;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

const EXACT_VERSION = /^[v=]?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)(?:\+[0-9A-Za-z.-]+)?$/;
const UNREACHABLE = new Set([
  'ENOTFOUND', 'EAI_AGAIN', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH',
  'ERR_SOCKET_TIMEOUT', 'ESOCKETTIMEDOUT', 'EPROTO', 'CERT_HAS_EXPIRED', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN', 'E500', 'E502', 'E503', 'E504',
]);
const LOCK_POLL_MS = 200;
const MAX_NPM_OUTPUT = 16 * 1024 * 1024;

/** Orders two exact versions by semver precedence (build metadata ignored). */
export function compareVersions(a: string, b: string): number {
  const split = (v: string) => {
    const [core, pre] = v.replace(/\+.*$/, '').split(/-(.*)/s);
    return { core: core.split('.').map(Number), pre: pre === undefined ? null : pre.split('.') };
  };
  const x = split(a);
  const y = split(b);
  for (let i = 0; i < 3; i++) if (x.core[i] !== y.core[i]) return (x.core[i] ?? 0) - (y.core[i] ?? 0);
  if (x.pre === null || y.pre === null) return x.pre === y.pre ? 0 : x.pre === null ? 1 : -1;
  for (let i = 0; i < Math.max(x.pre.length, y.pre.length); i++) {
    const p = x.pre[i];
    const q = y.pre[i];
    if (p === undefined || q === undefined) return p === undefined ? -1 : 1;
    if (p === q) continue;
    const pn = /^\d+$/.test(p);
    const qn = /^\d+$/.test(q);
    if (pn && qn) return Number(p) - Number(q);
    if (pn !== qn) return pn ? -1 : 1;
    return p < q ? -1 : 1;
  }
  return 0;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

function npmErrorCode(output: string): string | null {
  try {
    const parsed = JSON.parse(output) as { error?: { code?: unknown } };
    if (typeof parsed?.error?.code === 'string') return parsed.error.code;
  } catch {
    // Not JSON: npm wrote its error as text.
  }
  return /npm error code (\S+)/.exec(output)?.[1] ?? null;
}

function npmErrorSummary(output: string): string {
  try {
    const parsed = JSON.parse(output) as { error?: { summary?: unknown } };
    if (typeof parsed?.error?.summary === 'string') return parsed.error.summary.split('\n')[0];
  } catch {
    // Not JSON.
  }
  const lines = output.split('\n').filter((l) => l.startsWith('npm error') && !/npm error (code|A complete log|errno)/.test(l));
  return (lines[0] ?? output.trim().split('\n')[0] ?? '').replace(/^npm error\s*/, '').slice(0, 300);
}

/**
 * Packages installed from the npm registry for component bundles, one directory per exact version
 * (`<dir>/<name>@<version>/node_modules/<name>`), shared by every component importing that version
 * and never modified once complete. npm runs with lifecycle scripts off: packages are untrusted
 * code and must not run on the host. Failures that are the package's (no such package, no
 * matching version, registry unreachable, install failed) are ComponentCodeErrors naming it.
 */
export class PackageCache {
  /** The cache directory, as given. */
  readonly dir: string;
  /** The cache directory with symlinks resolved (esbuild reports real paths). */
  readonly realDir: string;
  private readonly npm: string;
  private readonly installTimeoutMs: number;
  private readonly registryTimeoutMs: number;
  private readonly rangeTtlMs: number;
  private readonly versions = new Map<string, { version: string; expiresAt: number }>();
  private readonly resolving = new Map<string, Promise<string>>();
  private readonly ensuring = new Map<string, Promise<void>>();
  private installs = 0;

  constructor(dir: string, options: PackageCacheOptions = {}) {
    mkdirSync(dir, { recursive: true });
    this.dir = dir;
    this.realDir = realpathSync(dir);
    this.npm = options.npm ?? 'npm';
    this.installTimeoutMs = options.installTimeoutMs ?? 120_000;
    this.registryTimeoutMs = options.registryTimeoutMs ?? 60_000;
    this.rangeTtlMs = options.rangeTtlMs ?? 10 * 60_000;
  }

  /** `npm install` runs this cache has made (an install found complete on disk is not counted). */
  get installCount(): number {
    return this.installs;
  }

  /** Where `name@version` is (or will be) installed: `<dir>/<name>@<version>`, real path. */
  installDir(name: string, version: string): string {
    return join(this.realDir, `${name}@${version}`);
  }

  /** The install directory a real path lies in, or null when it is not inside this cache. */
  installDirOf(path: string): string | null {
    const rel = relative(this.realDir, path);
    if (rel === '' || rel.startsWith('..') || rel.startsWith(sep)) return null;
    const parts = rel.split(sep);
    const depth = parts[0].startsWith('@') ? 2 : 1;
    if (parts.length <= depth || parts[0].startsWith('.')) return null;
    return join(this.realDir, ...parts.slice(0, depth));
  }

  /**
   * The exact version `range` stands for (`''` or null: the `latest` tag), the highest published
   * version matching it. Exact versions are remembered forever, ranges for `rangeTtlMs`.
   */
  async resolve(name: string, range: string | null = ''): Promise<string> {
    this.checkName(name, range);
    const wanted = (range ?? '').trim();
    const exact = EXACT_VERSION.exec(wanted)?.[1];
    // An exact version already installed needs no registry at all.
    if (exact && (await exists(this.installDir(name, exact)))) return exact;
    const key = `${name}@${wanted}`;
    const known = this.versions.get(key);
    if (known && known.expiresAt > Date.now()) return known.version;
    const pending = this.resolving.get(key);
    if (pending) return pending;
    const lookup = this.lookUp(name, wanted).then(
      (version) => {
        this.versions.set(key, { version, expiresAt: exact ? Number.POSITIVE_INFINITY : Date.now() + this.rangeTtlMs });
        return version;
      },
    ).finally(() => this.resolving.delete(key));
    this.resolving.set(key, lookup);
    return lookup;
  }

  /**
   * Installs `name@version` unless it is installed already; resolves to the package's root
   * directory. Concurrent calls for one package share one install, in this process through a
   * shared promise and across processes through a lock file.
   */
  async ensure(name: string, version: string): Promise<string> {
    this.checkName(name, version);
    if (!EXACT_VERSION.test(version)) throw new Error(`PackageCache.ensure needs an exact version, got "${version}"`);
    const key = `${name}@${version}`;
    const root = join(this.installDir(name, version), 'node_modules', name);
    if (await exists(join(root, 'package.json'))) return root;
    let pending = this.ensuring.get(key);
    if (!pending) {
      pending = this.installLocked(name, version).finally(() => this.ensuring.delete(key));
      this.ensuring.set(key, pending);
    }
    await pending;
    return root;
  }

  private checkName(name: string, range: string | null): void {
    const parsed = parsePackageSpecifier(range ? `${name}@${range}` : name);
    if (!parsed || parsed.name !== name || parsed.subpath !== '') {
      throw new ComponentCodeError(`"${packageLabel(name, range)}" is not a valid package name and version`);
    }
  }

  private async lookUp(name: string, range: string): Promise<string> {
    const label = packageLabel(name, range);
    const out = await this.runNpm(['view', label, 'version', '--json'], this.realDir, this.registryTimeoutMs);
    if (out.timedOut) throw new ComponentCodeError(`cannot install package "${label}": the npm registry did not answer within ${this.registryTimeoutMs / 1000} s`);
    if (!out.ok) throw this.failure(label, range, out);
    let answer: unknown;
    try {
      answer = out.stdout.trim() === '' ? [] : JSON.parse(out.stdout);
    } catch {
      throw new Error(`npm view ${label} answered something that is not JSON: ${out.stdout.slice(0, 200)}`);
    }
    const versions = (Array.isArray(answer) ? answer : [answer]).filter((v): v is string => typeof v === 'string' && EXACT_VERSION.test(v));
    if (versions.length === 0) throw new ComponentCodeError(`cannot install package "${label}": no published version matches "${range}"`);
    return versions.reduce((best, v) => (compareVersions(v, best) > 0 ? v : best));
  }

  private failure(label: string, range: string, out: NpmOutcome): Error {
    const code = npmErrorCode(out.stdout) ?? npmErrorCode(out.stderr);
    const summary = npmErrorSummary(out.stdout) || npmErrorSummary(out.stderr);
    if (code === 'E404' || code === 'ETARGET') {
      return /no match|notarget|no matching version/i.test(summary) || code === 'ETARGET'
        ? new ComponentCodeError(`cannot install package "${label}": no published version matches "${range}"`)
        : new ComponentCodeError(`cannot install package "${label}": not found in the registry`);
    }
    if (code && UNREACHABLE.has(code)) return new ComponentCodeError(`cannot install package "${label}": the npm registry cannot be reached (${code})`);
    if (code === 'ENOENT' && /spawn/.test(out.stderr)) return new Error(`npm cannot be run (${this.npm}): ${summary}`);
    return new ComponentCodeError(`cannot install package "${label}": ${summary || `npm failed${code ? ` (${code})` : ''}`}`);
  }

  private async installLocked(name: string, version: string): Promise<void> {
    const target = this.installDir(name, version);
    const locks = join(this.realDir, '.locks');
    await mkdir(locks, { recursive: true });
    const lockFile = join(locks, `${name.replace('/', '+')}@${version}.lock`);
    const waitUntil = Date.now() + this.installTimeoutMs + 30_000;
    for (;;) {
      if (await exists(join(target, 'node_modules', name, 'package.json'))) return;
      try {
        const handle = await open(lockFile, 'wx');
        await handle.writeFile(String(process.pid));
        await handle.close();
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      // Another process is installing it. A lock older than any install can take was left by a
      // process that died mid-install: take it over.
      const age = await stat(lockFile).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (age > this.installTimeoutMs + 30_000) await unlink(lockFile).catch(() => undefined);
      else if (Date.now() > waitUntil) throw new ComponentCodeError(`cannot install package "${name}@${version}": another install of it did not finish`);
      else await sleep(LOCK_POLL_MS);
    }
    try {
      if (await exists(join(target, 'node_modules', name, 'package.json'))) return;
      await this.install(name, version, target);
    } finally {
      await unlink(lockFile).catch(() => undefined);
    }
  }

  // Installs into a fresh directory and renames it into place: a crash mid-install never leaves a
  // directory that looks complete.
  private async install(name: string, version: string, target: string): Promise<void> {
    const label = `${name}@${version}`;
    const temp = join(this.realDir, '.tmp', `${name.replace('/', '+')}@${version}-${process.pid}-${randomBytes(4).toString('hex')}`);
    await mkdir(temp, { recursive: true });
    try {
      const out = await this.runNpm(
        ['install', '--no-save', '--ignore-scripts', '--no-audit', '--no-fund', '--omit=dev', '--loglevel=error', '--prefix', temp, label],
        temp,
        this.installTimeoutMs,
      );
      this.installs++;
      if (out.timedOut) throw new ComponentCodeError(`cannot install package "${label}": npm install did not finish within ${this.installTimeoutMs / 1000} s`);
      if (!out.ok) throw this.failure(label, version, out);
      const manifest = JSON.parse(await readFile(join(temp, 'node_modules', name, 'package.json'), 'utf8')) as { version?: unknown };
      if (manifest.version !== version) throw new ComponentCodeError(`cannot install package "${label}": npm installed version ${String(manifest.version)}`);
      await mkdir(dirname(target), { recursive: true });
      try {
        await rename(temp, target);
      } catch (error) {
        // Another process finished the same install first: theirs is as good as ours.
        if (!['ENOTEMPTY', 'EEXIST'].includes(String((error as NodeJS.ErrnoException).code))) throw error;
      }
    } finally {
      await rm(temp, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  private runNpm(args: string[], cwd: string, timeoutMs: number): Promise<NpmOutcome> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      // Also read by the nested npm that prepares git dependencies, which does not see our flags.
      npm_config_ignore_scripts: 'true',
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      // Fail fast when the registry is down instead of npm's default five-minute timeout.
      npm_config_fetch_timeout: String(Math.min(timeoutMs, 60_000)),
      npm_config_fetch_retries: '1',
      npm_config_fetch_retry_mintimeout: '2000',
      npm_config_fetch_retry_maxtimeout: '10000',
    };
    return new Promise((resolve) => {
      execFile(this.npm, args, { cwd, env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: MAX_NPM_OUTPUT, windowsHide: true }, (error, stdout, stderr) => {
        const failure = error as (NodeJS.ErrnoException & { killed?: boolean }) | null;
        if (failure && failure.code === 'ENOENT' && !stderr) stderr = `spawn ${this.npm} ENOENT\nnpm error code ENOENT`;
        resolve({ ok: !failure, stdout: String(stdout), stderr: String(stderr), timedOut: failure?.killed === true });
      });
    });
  }
}
