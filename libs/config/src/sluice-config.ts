import { parseAllowList, parseRetrySchedule } from '@app/delivery';
import { DEFAULT_RUN_OUTPUT_LIMITS, RunOutputLimits } from '@app/sandbox';
import { resolve } from 'node:path';

/** Typed server configuration, read once from the environment (API.md "Configuration"). */
export interface SluiceConfig {
  port: number;
  host: string;
  dataDir: string;
  /** Key for the first account on an empty store; generated when absent. */
  apiKey?: string;
  /** Base of the URLs handed out, without a trailing slash. */
  publicUrl: string;
  /** False when `publicUrl` was derived from HOST and PORT (then PORT=0 fixes it after listening). */
  publicUrlExplicit: boolean;
  /**
   * Hosts / IPs / CIDRs the server's own outbound requests (webhook deliveries, component URLs)
   * may reach despite the SSRF guard.
   */
  egressAllow: string[];
  /** The same for component code (`fetch`); separate so a webhook allowance never opens internal services to every tenant's code. */
  componentEgressAllow: string[];
  /** Seconds between delivery attempts; its length is the number of attempts. */
  retrySchedule: number[];
  deliveryTimeoutMs: number;
  /** SQLite synchronous mode: `full` fsyncs every group commit. */
  sqliteSync: 'full' | 'normal';
  /** Where that fsync runs: `auto` on the event loop while it is not busy, else on the libuv pool (`loop`, `pool`: always there). */
  fsyncPlacement: 'auto' | 'loop' | 'pool';
  /**
   * How long (ms) a source endpoint's request record may wait to share its commit and fsync with
   * its run's record (0: written at once). The caller's 2xx waits for it.
   */
  requestLingerMs: number;
  /**
   * `SLUICE_WORKFLOW_CHAIN` (`on` by default): a workflow step's invocation carries the steps after
   * it that can run in the sandbox worker without the server, so they cost one round trip together.
   */
  workflowChain: boolean;
  /** `SLUICE_LINGER_WHEN_SATURATED` (`off` by default): whether requests (appends whose callers wait for the fsync) still linger once the event loop is saturated. */
  lingerWhenSaturated: boolean;
  /**
   * SQLite locking of `sluice.db`: `normal` (default) lets other connections reach the file
   * meanwhile (the background checkpoint's, inspection with `sqlite3`); `exclusive` keeps the file
   * locked by the server for its lifetime (no lock calls per transaction; nothing else may open
   * the file while it runs, so checkpoints are inline).
   */
  sqliteLocking: 'exclusive' | 'normal';
  /**
   * `background` (default with normal locking): the WAL is copied back into the file on a worker
   * thread; `inline`: in the commit that crosses `wal_autocheckpoint`, on the event loop (the
   * default, and the only choice, with exclusive locking).
   */
  sqliteCheckpoint: 'inline' | 'background';
  /**
   * `SLUICE_SQLITE_WAL_BUFFER` (`on` by default): WAL frames reach the file through the SQLite
   * extension that writes a commit's frames in one call (`libs/event-store/native/wal-buffer.c`)
   * instead of two calls per frame. `off` leaves SQLite's own VFS, for comparison.
   */
  sqliteWalBuffer: boolean;
  /**
   * `SLUICE_SQLITE_WAL_SYNC` (`light` by default): the WAL's sync leaves out its inode where that
   * is as durable as `fdatasync` (`libs/event-store/native/wal-sync.c`); `ring`: the same, and a
   * sync on the event loop starts at its commit on io_uring where the kernel allows it (stop 69;
   * not the default since stop 70: no better in the server, 28 alternated rounds);
   * `fdatasync`: always `fdatasync`. The last two for comparison.
   */
  sqliteWalSync: 'light' | 'ring' | 'fdatasync';
  /**
   * `SLUICE_SQLITE_PAGE_SIZE` (bytes; 4,096 by default): SQLite's page size for `sluice.db` when the
   * server creates it, a power of two from 512 to 65,536. A database that exists keeps the size it
   * was made with. Every commit writes each page it changed whole to the WAL, so smaller pages
   * write fewer bytes per commit at everyday rates (see docs/architecture.md, "Page size").
   */
  sqlitePageSize: number;
  /**
   * `SLUICE_SANDBOX_SYNC_ENTRY` (`on` by default): a sandbox worker enters a warm isolate for one
   * run on its own thread (isolated-vm's `applySync`, at most 20 ms before it falls back) instead
   * of through isolated-vm's thread. `off` enters every run asynchronously, for comparison.
   */
  sandboxSyncEntry: boolean;
  /** Events of a source's stream between two snapshots of its state, at least (loading a source folds at most this many after its snapshot). */
  sourceSnapshotEvery: number;
  /** Sandbox worker processes at most. */
  sandboxWorkers: number;
  /** Sandbox worker processes started with the server; the others start on demand (first call, load). */
  sandboxMinWorkers: number;
  sandboxMemoryMb: number;
  sandboxTimeoutMs: number;
  /** Largest request body accepted on source endpoints (bytes). */
  maxEndpointBodyBytes: number;
  /** Largest REST body (bytes). */
  maxApiBodyBytes: number;
  /** Concurrent deliveries in flight per webhook. */
  deliveryConcurrencyPerWebhook: number;
  /** Runs (source requests and HTTP-triggered workflow runs) waiting in this process beyond which `/e/<key>` answers 429. */
  maxQueuedRuns: number;
  /** The same, per account: one account's flood leaves room for the others. */
  maxQueuedRunsPerAccount: number;
  /** Requests waiting to run for one source's endpoint: one slow source leaves room for its account's others. */
  sourceMaxWaitingRuns: number;
  /** Request bodies' bytes held by requests waiting to run, in this process (`SLUICE_MAX_QUEUED_BYTES`). */
  maxQueuedBytes: number;
  /** The same, for one account's endpoints. */
  maxQueuedBytesPerAccount: number;
  /** The same, for one source's or workflow's endpoint. */
  maxQueuedBytesPerEndpoint: number;
  /**
   * Runs one workflow may hold waiting or running (`SLUICE_WORKFLOW_MAX_WAITING_RUNS`): beyond it
   * its HTTP trigger answers 429 and its emits wait in the log until it has drained to half.
   */
  workflowMaxWaitingRuns: number;
  /** Caps on what one run may emit and write to its source's db. */
  runOutput: RunOutputLimits;
  /** Time a client has to send the request head (ms); then 408 and the connection is closed. */
  httpHeadersTimeoutMs: number;
  /** Time a client has to send the whole request, head and body (ms); then 408 and close. */
  httpBodyTimeoutMs: number;
  /** How long an idle keep-alive connection stays open (ms). */
  httpKeepAliveTimeoutMs: number;
  /** Open connections at most; further ones are closed at once until some go away. */
  httpMaxConnections: number;
  /**
   * Who reads requests first: `lean` (the default) reads plain requests to source endpoints itself
   * and hands every other connection to Node's HTTP server; `node` gives every connection to Node's.
   */
  endpointServer: 'lean' | 'node';
  /** Where `$.send.email` and `$.send.s3` of workflow steps go, and how long any send may take. */
  sends: SendsConfig;
  /**
   * OAuth clients of the catalog's OAuth apps, by slug, from `SLUICE_OAUTH_<SLUG>_CLIENT_ID` and
   * `SLUICE_OAUTH_<SLUG>_CLIENT_SECRET` (a provider issues a client per deployment).
   */
  oauthClients: Record<string, { clientId: string; clientSecret: string }>;
  /** How often the background refresher looks for OAuth access tokens to renew before they expire (ms). */
  oauthRefreshSweepMs: number;
}

/** `$.send.email` through SMTP (`SLUICE_SMTP_URL`); absent: mails go to `<data dir>/outbox/email/`. */
export interface SmtpConfig {
  /** `smtp://user:pass@host:port` (STARTTLS when offered) or `smtps://...` (TLS from the start). */
  url: string;
  /** The `From` of every mail. */
  from: string;
  /** The recipient when the sending account has no address of its own. */
  to?: string;
}

/** `$.send.s3` to an S3-compatible endpoint, path-style; absent: objects go to `<data dir>/outbox/s3/`. */
export interface S3Config {
  /** Base URL, e.g. `http://127.0.0.1:9000`; objects are PUT to `<endpoint>/<bucket>/<key>`. */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}

export interface SendsConfig {
  smtp?: SmtpConfig;
  s3?: S3Config;
  /** Bounds one send from connection to the last response byte (ms). */
  timeoutMs: number;
}

/** A configuration value that cannot be used; names the variable. */
export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

function intVar(env: NodeJS.ProcessEnv, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(name, `expected an integer between ${min} and ${max}, got "${raw}"`);
  }
  return n;
}

/** A power of two from 512 to 65,536 (SQLite's page sizes), `def` when unset or empty. */
function pageSizeVar(env: NodeJS.ProcessEnv, name: string, def: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 512 || n > 65_536 || (n & (n - 1)) !== 0) {
    throw new ConfigError(name, `expected a power of two from 512 to 65536, got "${raw}"`);
  }
  return n;
}

/** `on` or `off` (any case), `def` when unset or empty. */
function onOff(env: NodeJS.ProcessEnv, name: string, def: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return def;
  if (raw !== 'on' && raw !== 'off') throw new ConfigError(name, `expected on or off, got "${env[name]}"`);
  return raw === 'on';
}

/** Runs a parser of another library and reports its failure as a ConfigError naming the variable. */
function parsed<T>(variable: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new ConfigError(variable, (err as Error).message.replace(new RegExp(`^${variable}:\\s*`), ''));
  }
}

const MB = 1024 * 1024;

function runOutputLimits(env: NodeJS.ProcessEnv): RunOutputLimits {
  const d = DEFAULT_RUN_OUTPUT_LIMITS;
  return {
    ...d,
    maxEmits: intVar(env, 'SLUICE_MAX_EMITS_PER_RUN', d.maxEmits, 1, 1_000_000),
    maxEmitBytes: intVar(env, 'SLUICE_MAX_EMIT_BYTES', d.maxEmitBytes, 1, 64 * MB),
    maxRunEmitBytes: intVar(env, 'SLUICE_MAX_RUN_EMIT_BYTES', d.maxRunEmitBytes, 1, 1024 * MB),
    maxDbWriteBytesPerRun: intVar(env, 'SLUICE_MAX_DB_WRITE_BYTES_PER_RUN', d.maxDbWriteBytesPerRun, 1, 64 * MB),
    maxDbBytesPerSource: intVar(env, 'SLUICE_MAX_DB_BYTES_PER_SOURCE', d.maxDbBytesPerSource, 1, 1024 * MB),
  };
}

/** An address for a mail header: `a@b.c` or `Name <a@b.c>`; only the `@` is checked, the SMTP server judges the rest. */
function looksLikeAddress(text: string): boolean {
  return /^[^\s@<>,]+@[^\s@<>,]+$/.test(text) || /^[^<>]*<[^\s@<>,]+@[^\s@<>,]+>$/.test(text);
}

function smtpConfig(env: NodeJS.ProcessEnv): SmtpConfig | undefined {
  const raw = env.SLUICE_SMTP_URL?.trim();
  if (!raw) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  // The value is never echoed: it carries the SMTP password.
  if (!url || (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || !url.hostname) {
    throw new ConfigError('SLUICE_SMTP_URL', 'expected smtp://user:pass@host:port or smtps://user:pass@host:port');
  }
  const from = env.SLUICE_SMTP_FROM?.trim();
  if (!from) throw new ConfigError('SLUICE_SMTP_FROM', 'required when SLUICE_SMTP_URL is set (the From of every mail)');
  if (!looksLikeAddress(from)) throw new ConfigError('SLUICE_SMTP_FROM', `expected an address like sluice@example.com or "Sluice <sluice@example.com>", got "${from}"`);
  const to = env.SLUICE_SMTP_TO?.trim() || undefined;
  if (to !== undefined) {
    const bad = to.split(',').map((part) => part.trim()).find((part) => !looksLikeAddress(part));
    if (bad !== undefined) throw new ConfigError('SLUICE_SMTP_TO', `expected comma-separated addresses, got "${bad}"`);
  }
  return { url: raw, from, to };
}

function s3Config(env: NodeJS.ProcessEnv): S3Config | undefined {
  const endpoint = env.SLUICE_S3_ENDPOINT?.trim();
  const accessKeyId = env.SLUICE_S3_ACCESS_KEY_ID?.trim();
  const secretAccessKey = env.SLUICE_S3_SECRET_ACCESS_KEY?.trim();
  if (!endpoint) {
    if (accessKeyId) throw new ConfigError('SLUICE_S3_ACCESS_KEY_ID', 'set, but SLUICE_S3_ENDPOINT is not (without it objects go to the outbox)');
    if (secretAccessKey) throw new ConfigError('SLUICE_S3_SECRET_ACCESS_KEY', 'set, but SLUICE_S3_ENDPOINT is not (without it objects go to the outbox)');
    return undefined;
  }
  let url: URL | undefined;
  try {
    url = new URL(endpoint);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname || url.username || url.search || url.hash) {
    throw new ConfigError('SLUICE_S3_ENDPOINT', `expected an http(s) URL without credentials or query (keys go in SLUICE_S3_ACCESS_KEY_ID / SLUICE_S3_SECRET_ACCESS_KEY), got "${endpoint}"`);
  }
  if (!accessKeyId) throw new ConfigError('SLUICE_S3_ACCESS_KEY_ID', 'required when SLUICE_S3_ENDPOINT is set');
  if (!secretAccessKey) throw new ConfigError('SLUICE_S3_SECRET_ACCESS_KEY', 'required when SLUICE_S3_ENDPOINT is set');
  const region = env.SLUICE_S3_REGION?.trim() || 'us-east-1';
  if (!/^[a-z0-9-]{1,64}$/.test(region)) throw new ConfigError('SLUICE_S3_REGION', `expected a region name like us-east-1, got "${region}"`);
  return { endpoint: endpoint.replace(/\/+$/, ''), accessKeyId, secretAccessKey, region };
}

/** `SLUICE_OAUTH_<SLUG>_CLIENT_ID` / `_CLIENT_SECRET` pairs; one without the other is an error naming the missing one. */
function oauthClients(env: NodeJS.ProcessEnv): Record<string, { clientId: string; clientSecret: string }> {
  const out: Record<string, { clientId: string; clientSecret: string }> = {};
  for (const name of Object.keys(env)) {
    const m = /^SLUICE_OAUTH_([A-Z0-9_]+)_CLIENT_(ID|SECRET)$/.exec(name);
    if (!m) continue;
    const slug = m[1].toLowerCase();
    if (out[slug]) continue;
    const clientId = env[`SLUICE_OAUTH_${m[1]}_CLIENT_ID`]?.trim();
    const clientSecret = env[`SLUICE_OAUTH_${m[1]}_CLIENT_SECRET`]?.trim();
    // The secret is never echoed.
    if (!clientId) throw new ConfigError(`SLUICE_OAUTH_${m[1]}_CLIENT_ID`, `required when SLUICE_OAUTH_${m[1]}_CLIENT_SECRET is set`);
    if (!clientSecret) throw new ConfigError(`SLUICE_OAUTH_${m[1]}_CLIENT_SECRET`, `required when SLUICE_OAUTH_${m[1]}_CLIENT_ID is set`);
    out[slug] = { clientId, clientSecret };
  }
  return out;
}

/** Reads and validates the configuration; throws `ConfigError` naming the bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): SluiceConfig {
  const port = intVar(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST && env.HOST.trim() ? env.HOST.trim() : '127.0.0.1';
  const publicUrlRaw = env.SLUICE_PUBLIC_URL?.trim();
  if (publicUrlRaw) {
    try {
      const u = new URL(publicUrlRaw);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
    } catch {
      throw new ConfigError('SLUICE_PUBLIC_URL', `expected an http(s) URL, got "${publicUrlRaw}"`);
    }
  }
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const httpHeadersTimeoutMs = intVar(env, 'SLUICE_HTTP_HEADERS_TIMEOUT_MS', 10_000, 10, 600_000);
  const httpBodyTimeoutMs = intVar(env, 'SLUICE_HTTP_BODY_TIMEOUT_MS', 30_000, 10, 3_600_000);
  // Node refuses a head timeout longer than the whole-request one (the head is part of it).
  if (httpHeadersTimeoutMs > httpBodyTimeoutMs) {
    throw new ConfigError('SLUICE_HTTP_HEADERS_TIMEOUT_MS', `must not exceed SLUICE_HTTP_BODY_TIMEOUT_MS (${httpBodyTimeoutMs}), got ${httpHeadersTimeoutMs}`);
  }
  const sync = (env.SLUICE_SQLITE_SYNC ?? 'full').toLowerCase();
  if (sync !== 'full' && sync !== 'normal') throw new ConfigError('SLUICE_SQLITE_SYNC', `expected full or normal, got "${sync}"`);
  const placement = (env.SLUICE_FSYNC_PLACEMENT ?? 'auto').toLowerCase();
  if (placement !== 'auto' && placement !== 'loop' && placement !== 'pool') {
    throw new ConfigError('SLUICE_FSYNC_PLACEMENT', `expected auto, loop or pool, got "${placement}"`);
  }
  const endpointServer = (env.SLUICE_ENDPOINT_SERVER ?? 'lean').toLowerCase();
  if (endpointServer !== 'lean' && endpointServer !== 'node') {
    throw new ConfigError('SLUICE_ENDPOINT_SERVER', `expected lean or node, got "${endpointServer}"`);
  }
  // Read where the digests are made (@app/native), which would refuse it at the first delivery: refused here, at the start.
  const leanDigest = env.SLUICE_LEAN_DIGEST ?? '';
  if (leanDigest !== '' && leanDigest !== 'on' && leanDigest !== 'off') {
    throw new ConfigError('SLUICE_LEAN_DIGEST', `expected on or off, got "${leanDigest}"`);
  }
  const walSync = (env.SLUICE_SQLITE_WAL_SYNC ?? 'light').toLowerCase();
  if (walSync !== 'light' && walSync !== 'ring' && walSync !== 'fdatasync') {
    throw new ConfigError('SLUICE_SQLITE_WAL_SYNC', `expected light, ring or fdatasync, got "${walSync}"`);
  }
  const locking = (env.SLUICE_SQLITE_LOCKING ?? 'normal').toLowerCase();
  if (locking !== 'exclusive' && locking !== 'normal') {
    throw new ConfigError('SLUICE_SQLITE_LOCKING', `expected exclusive or normal, got "${locking}"`);
  }
  // Background checkpoints by default; with exclusive locking they cannot be (no other connection
  // reaches the WAL index), so that choice alone brings the inline ones.
  const checkpoint = (env.SLUICE_SQLITE_CHECKPOINT ?? (locking === 'exclusive' ? 'inline' : 'background')).toLowerCase();
  if (checkpoint !== 'inline' && checkpoint !== 'background') {
    throw new ConfigError('SLUICE_SQLITE_CHECKPOINT', `expected inline or background, got "${checkpoint}"`);
  }
  if (checkpoint === 'background' && locking !== 'normal') {
    throw new ConfigError('SLUICE_SQLITE_CHECKPOINT', 'background needs SLUICE_SQLITE_LOCKING=normal (another connection must reach the WAL index)');
  }
  return {
    port,
    host,
    dataDir: resolve(env.SLUICE_DATA_DIR?.trim() || './data'),
    apiKey: env.SLUICE_API_KEY?.trim() || undefined,
    publicUrl: (publicUrlRaw || `http://${urlHost}:${port}`).replace(/\/+$/, ''),
    publicUrlExplicit: Boolean(publicUrlRaw),
    egressAllow: parsed('SLUICE_EGRESS_ALLOW', () => parseAllowList(env.SLUICE_EGRESS_ALLOW)),
    componentEgressAllow: parsed('SLUICE_COMPONENT_EGRESS_ALLOW', () => parseAllowList(env.SLUICE_COMPONENT_EGRESS_ALLOW, 'SLUICE_COMPONENT_EGRESS_ALLOW')),
    retrySchedule: parsed('SLUICE_RETRY_SCHEDULE', () => parseRetrySchedule(env.SLUICE_RETRY_SCHEDULE)),
    deliveryTimeoutMs: intVar(env, 'SLUICE_DELIVERY_TIMEOUT_MS', 15000, 1, 600000),
    sqliteSync: sync,
    fsyncPlacement: placement,
    requestLingerMs: intVar(env, 'SLUICE_REQUEST_LINGER_MS', 2, 0, 100),
    lingerWhenSaturated: onOff(env, 'SLUICE_LINGER_WHEN_SATURATED', false),
    workflowChain: onOff(env, 'SLUICE_WORKFLOW_CHAIN', true),
    sqliteLocking: locking,
    sqliteCheckpoint: checkpoint,
    sqliteWalBuffer: onOff(env, 'SLUICE_SQLITE_WAL_BUFFER', true),
    sqliteWalSync: walSync,
    sqlitePageSize: pageSizeVar(env, 'SLUICE_SQLITE_PAGE_SIZE', 4096),
    sandboxSyncEntry: onOff(env, 'SLUICE_SANDBOX_SYNC_ENTRY', true),
    sourceSnapshotEvery: intVar(env, 'SLUICE_SOURCE_SNAPSHOT_EVERY', 10_000, 1, 1_000_000_000),
    sandboxWorkers: intVar(env, 'SLUICE_SANDBOX_WORKERS', 2, 1, 64),
    sandboxMinWorkers: intVar(env, 'SLUICE_SANDBOX_MIN_WORKERS', 1, 0, 64),
    sandboxMemoryMb: intVar(env, 'SLUICE_SANDBOX_MEMORY_MB', 128, 8, 4096),
    sandboxTimeoutMs: intVar(env, 'SLUICE_SANDBOX_TIMEOUT_MS', 30000, 10, 3600000),
    maxEndpointBodyBytes: 512 * 1024,
    maxApiBodyBytes: 1024 * 1024,
    deliveryConcurrencyPerWebhook: intVar(env, 'SLUICE_DELIVERY_CONCURRENCY', 64, 1, 1024),
    maxQueuedRuns: intVar(env, 'SLUICE_MAX_QUEUED_RUNS', 20_000, 1, 10_000_000),
    maxQueuedRunsPerAccount: intVar(env, 'SLUICE_MAX_QUEUED_RUNS_PER_ACCOUNT', 5_000, 1, 10_000_000),
    sourceMaxWaitingRuns: intVar(env, 'SLUICE_SOURCE_MAX_WAITING_RUNS', 1_000, 1, 1_000_000),
    maxQueuedBytes: intVar(env, 'SLUICE_MAX_QUEUED_BYTES', 128 * MB, 1, 64 * 1024 * MB),
    maxQueuedBytesPerAccount: intVar(env, 'SLUICE_MAX_QUEUED_BYTES_PER_ACCOUNT', 32 * MB, 1, 64 * 1024 * MB),
    maxQueuedBytesPerEndpoint: intVar(env, 'SLUICE_MAX_QUEUED_BYTES_PER_ENDPOINT', 8 * MB, 1, 64 * 1024 * MB),
    workflowMaxWaitingRuns: intVar(env, 'SLUICE_WORKFLOW_MAX_WAITING_RUNS', 1_000, 2, 1_000_000),
    runOutput: runOutputLimits(env),
    httpHeadersTimeoutMs,
    httpBodyTimeoutMs,
    httpKeepAliveTimeoutMs: intVar(env, 'SLUICE_HTTP_KEEPALIVE_TIMEOUT_MS', 5_000, 10, 600_000),
    httpMaxConnections: intVar(env, 'SLUICE_HTTP_MAX_CONNECTIONS', 10_000, 1, 1_000_000),
    endpointServer,
    sends: {
      smtp: smtpConfig(env),
      s3: s3Config(env),
      timeoutMs: intVar(env, 'SLUICE_SEND_TIMEOUT_MS', 15_000, 1, 600_000),
    },
    oauthClients: oauthClients(env),
    oauthRefreshSweepMs: intVar(env, 'SLUICE_OAUTH_REFRESH_SWEEP_MS', 30_000, 10, 3_600_000),
  };
}
