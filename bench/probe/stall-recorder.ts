import fs from 'node:fs';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { sqliteClasses } from './sqlite-statement';

/**
 * A measuring instrument for the p99 of issue 10, loaded into the server with
 * `node --require dist/bench/probe/stall-recorder.js dist/src/main.js` (`BENCH_ONLY=stalls`); the
 * server's code is not changed. It records, on the wall clock the bench's receipts use
 * (`performance.timeOrigin + performance.now()`, in ms), what holds the server's event loop:
 * - `stall`: a 1 ms interval timer that fired more than 3 ms late (the loop was busy, or the
 *   thread was not running);
 * - `gc`: a garbage collection pause over 1 ms;
 * - `commit`: an SQLite `COMMIT` over 1 ms (one that crossed `wal_autocheckpoint` copies the WAL
 *   into the file inside it);
 * - `fsync`: an `fdatasync` on the loop over 1 ms.
 * Each line is `<kind> <start ms> <duration ms>`, written to `STALL_FILE` every second
 * and at exit.
 */
const file = process.env.STALL_FILE;
const lines: string[] = [];
const now = () => performance.timeOrigin + performance.now();
const note = (kind: string, start: number, ms: number) => {
  if (lines.length < 1_000_000) lines.push(`${kind} ${start.toFixed(2)} ${ms.toFixed(2)}`);
};

let last = now();
setInterval(() => {
  const t = now();
  if (t - last > 4) note('stall', last + 1, t - last - 1);
  last = t;
}, 1).unref();

new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if (e.duration > 1) note('gc', performance.timeOrigin + e.startTime, e.duration);
  }
}).observe({ entryTypes: ['gc'] });

// COMMIT statements.
const { Statement } = sqliteClasses();
const run = Statement.run;
Statement.run = function (this: { source?: string }, ...args: unknown[]) {
  if (this.source !== 'COMMIT') return run.apply(this, args);
  const t = now();
  try {
    return run.apply(this, args);
  } finally {
    const ms = now() - t;
    if (ms > 1) note('commit', t, ms);
  }
};

// The store calls `fdatasyncSync` through the module object, so the wrapper sees every call.
const fdatasyncSync = fs.fdatasyncSync;
fs.fdatasyncSync = function (fd: number) {
  const t = now();
  try {
    fdatasyncSync(fd);
  } finally {
    const ms = now() - t;
    if (ms > 1) note('fsync', t, ms);
  }
};

const flush = () => {
  if (!file) return;
  try {
    fs.writeFileSync(file, lines.join('\n'));
  } catch {
    // the bench reads what was written last
  }
};
setInterval(flush, 1000).unref();
process.on('exit', flush);
