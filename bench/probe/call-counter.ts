/* eslint-disable @typescript-eslint/no-require-imports */
import fs from 'node:fs';
import { join } from 'node:path';
import { sqliteClasses } from './sqlite-statement';

/**
 * A measuring instrument for issue 10, loaded into the server with
 * `node --require dist/bench/probe/call-counter.js dist/src/main.js` (the bench passes it through
 * `BENCH_NODE_ARGS`); the server's code is not changed. It counts, in the server process, the
 * costs paid per commit and per wake-up: event-store group commits and appends, WAL fsyncs, log
 * reads by subscriptions, read-model transactions, SQL statements run, IPC writes to sandbox
 * workers (with their bytes, sampled), outgoing HTTP requests and timers armed. On SIGUSR2 it
 * writes the counters as JSON to `PROBE_FILE`, so a bench reads them before and after a phase and
 * divides by the events delivered meanwhile. The counting wrappers cost CPU themselves, and a CPU
 * profile charges native calls (SQLite) to the wrapper's frame: read the counts, not the timings,
 * of a probed run.
 */
const counters: Record<string, number> = {};
const bump = (k: string, by = 1) => (counters[k] = (counters[k] ?? 0) + by);

/** Wraps `obj[name]` with a counter (and an optional extra look at the arguments / this). */
function count(obj: any, name: string, key: string, look?: (self: any, args: any[]) => void): void {
  const original = obj?.[name];
  if (typeof original !== 'function') {
    bump(`probe.missing.${key}`);
    return;
  }
  obj[name] = function (this: any, ...args: any[]) {
    bump(key);
    look?.(this, args);
    return original.apply(this, args);
  };
}

// Timers and immediates: every one armed is a wake-up (or a cancelled one).
// PROBE_TIMER_SITES=1 also counts setTimeout by the code that armed it (1 call in 10 sampled, scaled).
let timerSeen = 0;
const lookAtTimer = process.env.PROBE_TIMER_SITES === '1'
  ? (_self: unknown, args: any[]) => {
      if (timerSeen++ % 10 !== 0) return;
      const frames = (new Error().stack ?? '').split('\n').slice(1);
      const site = frames.find((f) => !f.includes('call-counter') && !f.includes('node:'))?.trim().replace(/^at /, '') ?? 'node internals';
      const delay = typeof args[1] === 'number' ? Math.round(args[1]) : 0;
      bump(`timers.site ${site.replace(/.*\/dist\//, '')} (${delay} ms)`, 10);
    }
  : undefined;
count(globalThis, 'setTimeout', 'timers.setTimeout', lookAtTimer);
count(globalThis, 'setInterval', 'timers.setInterval');
count(globalThis, 'setImmediate', 'timers.setImmediate');
count(fs, 'fsync', 'fs.fsync');
count(fs, 'fdatasync', 'fs.fdatasync');
count(fs, 'fsyncSync', 'fs.fsyncSync');
count(fs, 'fdatasyncSync', 'fs.fdatasyncSync');
let sendSeen = 0;
/** IPC writes to sandbox workers (one message carries a batch of calls), sampled for their size. */
const lookAtIpc = (_self: unknown, args: any[]) => {
  // Sampled: stringifying every message would cost as much as sending it.
  if (sendSeen++ % 20 === 0) {
    bump('ipc.sampledMessages');
    bump('ipc.sampledBytes', JSON.stringify(args[0])?.length ?? 0);
    if (Array.isArray(args[0])) bump('ipc.sampledBatchedCalls', args[0].length);
  }
};
count(require('node:http'), 'request', 'http.request');

// PROBE_JSON_SITES=1 counts the characters JSON.stringify writes and JSON.parse reads by the code
// that called it (1 call in 10 sampled for the site, scaled). Node's own serialisers (the IPC
// channel's) captured JSON at start-up and are not seen here; `ipc.sampledBytes` counts those.
if (process.env.PROBE_JSON_SITES === '1') {
  let jsonSeen = 0;
  const siteOf = (): string => {
    const frames = (new Error().stack ?? '').split('\n').slice(2);
    return frames.find((f) => !f.includes('call-counter'))?.trim().replace(/^at /, '').replace(/\(?\/.*\/dist\//, '(') ?? '?';
  };
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  JSON.stringify = function (this: unknown, ...args: any[]) {
    const out = (stringify as any).apply(this, args) as string | undefined;
    bump('json.stringifyCalls');
    bump('json.stringifyChars', out?.length ?? 0);
    if (jsonSeen++ % 10 === 0) bump(`json.stringify ${siteOf()}`, 10 * (out?.length ?? 0));
    return out;
  } as typeof JSON.stringify;
  JSON.parse = function (this: unknown, ...args: any[]) {
    const text = String(args[0]);
    bump('json.parseCalls');
    bump('json.parseChars', text.length);
    if (jsonSeen++ % 10 === 0) bump(`json.parse ${siteOf()}`, 10 * text.length);
    return (parse as any).apply(this, args);
  } as typeof JSON.parse;
}

// SQL statements: every statement the server prepares.
const { Database, Statement } = sqliteClasses();
// PROBE_SQL_TEXT=1 also counts each statement by its text (its first 70 characters).
const bySql = process.env.PROBE_SQL_TEXT === '1'
  ? (self: any) => bump(`sql.text ${String(self?.source ?? '').replace(/\s+/g, ' ').slice(0, 70)}`)
  : undefined;
for (const m of ['run', 'get', 'all', 'iterate']) count(Statement, m, `sql.${m}`, bySql);
count(Database.prototype, 'exec', 'sql.exec');

// The server's own classes are patched once main.js has loaded them (synchronously, before any timer).
const dist = join(__dirname, '..', '..');
function patchLoaded(): void {
  const load = (rel: string) => require.cache[join(dist, rel)]?.exports;
  const store = load('libs/event-store/src/sqlite-event-store.js')?.SqliteEventStore?.prototype;
  count(store, 'flush', 'store.flushCalls', (self) => {
    const queued = self.queue?.length ?? 0;
    if (queued > 0) {
      bump('store.groupCommits');
      bump('store.appends', queued);
    }
  });
  count(store, 'startSync', 'store.fsyncs');
  // Each sync that ended, light (its pages and the disk's flush, see wal-sync.c) or a full fdatasync.
  count(store, 'synced', 'store.syncsEnded', (self) => {
    const counts = self.walSyncCounts?.() ?? { light: 0, started: 0 };
    const light = counts.light ?? 0;
    if (light > (self.probeLightSeen ?? 0)) bump('store.lightSyncs', light - (self.probeLightSeen ?? 0));
    self.probeLightSeen = light;
    // Of them, those started at the commit on io_uring and waited for a turn later.
    const started = counts.started ?? 0;
    if (started > (self.probeStartedSeen ?? 0)) bump('store.syncsStartedEarly', started - (self.probeStartedSeen ?? 0));
    self.probeStartedSeen = started;
    // On the event loop (fsyncPlacement), the others on the libuv pool.
    const onLoop = self.fsyncsOnLoop ?? 0;
    if (onLoop > (self.probeOnLoopSeen ?? 0)) bump('store.syncsOnLoop', onLoop - (self.probeOnLoopSeen ?? 0));
    self.probeOnLoopSeen = onLoop;
  });
  count(store, 'readAllSync', 'store.logReads');
  count(load('libs/sandbox/src/sandbox-worker.handle.js')?.SandboxWorkerHandle?.prototype, 'write', 'ipc.messagesToWorkers', lookAtIpc);
  const projection = load('libs/projections/src/read-models.projection.js')?.ReadModelsProjection?.prototype;
  count(projection, 'apply', 'readModels.transactions', (_self, args) => bump('readModels.events', args[0]?.length ?? 0));
}
const timer = (globalThis as any).setTimeout;
timer(patchLoaded, 0);

process.on('SIGUSR2', () => {
  const file = process.env.PROBE_FILE;
  if (file) fs.writeFileSync(file, JSON.stringify({ at: Date.now(), counters }));
});
