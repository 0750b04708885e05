import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../libs/config/src';
import { EngineRuntime, PAGE_CACHE_KIB } from '../libs/engine/src/engine-runtime';

/** Commits per measured slice. */
const SLICE = 20_000;

/** Microseconds per commit, by slice of {@link SLICE} commits, with the page cache at `kib`. */
async function commitCosts(kib: number, commits: number): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-cache-'));
  // The engine's own connection and settings (WAL, locking, mmap, checkpoints), the cache resized.
  const rt = new EngineRuntime(loadConfig({ SLUICE_DATA_DIR: dir, SLUICE_SQLITE_SYNC: 'normal' }), { sandbox: false });
  try {
    const db = rt.store.db;
    db.pragma(`cache_size = -${kib}`);
    // Rows under random keys, as rm_deliveries' (uuidv5 of emit and webhook): inserts split
    // B-tree pages all over the index, and some of those splits reorder the pages they allocate.
    db.exec('CREATE TABLE bench_cache_rows (id TEXT PRIMARY KEY, body TEXT, status TEXT)');
    const insert = db.prepare('INSERT INTO bench_cache_rows (id, body, status) VALUES (?, ?, ?)');
    const begin = db.prepare('BEGIN');
    const commit = db.prepare('COMMIT');
    const body = 'x'.repeat(300);
    const slices: number[] = [];
    let started = process.hrtime.bigint();
    for (let i = 1; i <= commits; i++) {
      begin.run();
      for (let j = 0; j < 3; j++) insert.run(randomUUID(), body, 'pending');
      commit.run();
      if (i % SLICE === 0) {
        const now = process.hrtime.bigint();
        slices.push(Number(now - started) / 1e3 / SLICE);
        started = now;
      }
    }
    return slices;
  } finally {
    await rt.store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What the size of SQLite's page cache costs each commit (see `PAGE_CACHE_KIB` in
 * `libs/engine/src/engine-runtime.ts`): the same random-key inserts, three per commit, on the
 * engine's connection with a 64 MB cache, the engine's and SQLite's default 2,000 KiB. The cost
 * grows as the cache fills, so the last slice is the one to compare. `BENCH_CACHE_COMMITS`
 * (default 120,000).
 */
export async function benchPageCache(log: (s: string) => void): Promise<void> {
  const commits = Number(process.env.BENCH_CACHE_COMMITS ?? 120_000);
  if (!(commits >= SLICE)) throw new Error(`BENCH_CACHE_COMMITS must be at least ${SLICE} (got ${process.env.BENCH_CACHE_COMMITS})`);
  const sizes = [65_536, PAGE_CACHE_KIB, 2_000];
  const last = new Map<number, number>();
  for (const kib of sizes) {
    const slices = await commitCosts(kib, commits);
    last.set(kib, slices[slices.length - 1]);
    const label = kib === PAGE_CACHE_KIB ? `${kib} KiB (the engine's)` : `${kib} KiB`;
    log(`  cache ${label}: us per commit of 3 inserts, by ${SLICE.toLocaleString('en-US')}-commit slice: ${slices.map((s) => s.toFixed(1)).join(', ')}`);
  }
  const base = last.get(65_536)!;
  log(`  last slice against 64 MB: ${sizes.slice(1).map((kib) => `${kib} KiB ${(last.get(kib)! / base).toFixed(2)}x`).join(', ')}`);
}
