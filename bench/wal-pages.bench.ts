import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startBenchServer } from './bench-server';
import { BenchReceiver, LoadGenerator } from './e2e.bench';
import { pipelineFromEnv } from './workflows.bench';

/** Size of the WAL file's header and of each frame's header (SQLite's WAL format). */
const WAL_HEADER = 32;
const FRAME_HEADER = 24;

/**
 * The frames of a WAL file from byte `from` on, as commits (lists of page numbers); its page size;
 * and where its current frames end. The file is not truncated when the WAL restarts from its start
 * after a checkpoint, so frames of an earlier generation may follow the current ones: a frame
 * belongs to the current WAL only while it carries the header's salts.
 */
export function walCommits(file: string, from = WAL_HEADER): { pageSize: number; commits: number[][]; end: number } {
  const wal = readFileSync(file);
  const pageSize = wal.readUInt32BE(8);
  const salts = wal.subarray(16, 24);
  const commits: number[][] = [];
  let current: number[] = [];
  let end = WAL_HEADER;
  const start = Math.max(WAL_HEADER, from);
  for (let off = start; off + FRAME_HEADER + pageSize <= wal.length; off += FRAME_HEADER + pageSize) {
    if (!wal.subarray(off + 8, off + 16).equals(salts)) break;
    current.push(wal.readUInt32BE(off));
    // A commit frame carries the database size after the commit; others carry 0.
    if (wal.readUInt32BE(off + 4) !== 0) {
      commits.push(current);
      current = [];
      end = off + FRAME_HEADER + pageSize;
    }
  }
  return { pageSize, commits, end };
}

/**
 * Pages written per delivered event, by table and index (issue 10): every commit writes each page
 * it changed, whole, to the WAL, so this counts what the commit path costs the disk and the CPU
 * (a write and a checksum per page), independently of how busy the machine is. The e2e pipeline
 * runs `BENCH_WAL_EVENTS` requests at `BENCH_WAL_RATE` a second (defaults 80 and 200: the quiet
 * WAL holds 2,048 pages before it is checkpointed), after `BENCH_WAL_WARMUP_SECONDS` (default 1)
 * at that rate (longer grows the tables, so that rows with random keys land on pages of their
 * own), starting right after a checkpoint; the server is SIGKILLed with its WAL in place, and the frames written during the load are mapped to tables with SQLite's `dbstat`
 * (on a copy, as of the end of the run: a page freed and reused meanwhile counts for its last
 * owner). `BENCH_PIPELINE=workflow` counts the three-step workflow's runs instead.
 */
export async function benchWalPages(log: (s: string) => void): Promise<void> {
  const events = Number(process.env.BENCH_WAL_EVENTS ?? 80);
  const rate = Number(process.env.BENCH_WAL_RATE ?? 200);
  const warmUpSeconds = Number(process.env.BENCH_WAL_WARMUP_SECONDS ?? 1);
  const receiver = new BenchReceiver();
  receiver.keepReceipts = false;
  const receiverUrl = await receiver.start();
  // Exclusive locking with inline checkpoints: the pages a commit writes do not depend on the
  // mode, but the default's checkpoint thread would copy (and restart) the WAL during the load.
  const server = await startBenchServer({ SLUICE_EGRESS_ALLOW: '127.0.0.1', SLUICE_SQLITE_LOCKING: 'exclusive', SLUICE_SQLITE_CHECKPOINT: 'inline' });
  const copy = mkdtempSync(join(tmpdir(), 'sluice-wal-'));
  try {
    const wh = await server.post('/v1/webhooks', { url: receiverUrl, name: 'wal', description: '' });
    // BENCH_PIPELINE=workflow: the three-step workflow's runs instead of the source's events.
    const { endpointUrl } = await pipelineFromEnv()(server.post, wh.id as string);
    const load = new LoadGenerator({ pid: server.proc.pid!, endpointUrl }, receiver);
    try {
      await load.run({ label: 'warm-up', rate, seconds: warmUpSeconds });
      await new Promise((r) => setTimeout(r, 500));
      const walFile = join(server.dataDir, 'sluice.db-wal');
      // Start right after the WAL restarted (a checkpoint), so the load has the most room before the next one.
      for (let i = 0; i < 50; i++) {
        const salts = readFileSync(walFile).subarray(16, 24);
        await load.run({ label: 'until a checkpoint', rate, seconds: 0.1 });
        await new Promise((r) => setTimeout(r, 100));
        if (!readFileSync(walFile).subarray(16, 24).equals(salts)) break;
      }
      const marker = walCommits(walFile).end;
      // The salts change when the WAL restarts from its start (after a checkpoint): then the frames after the marker are not this load's.
      const saltsBefore = readFileSync(walFile).subarray(16, 24).toString('hex');
      const phase = await load.run({ label: `${events} events at ${rate}/s`, rate, seconds: events / rate });
      await new Promise((r) => setTimeout(r, 500));
      await server.kill();
      copyFileSync(join(server.dataDir, 'sluice.db'), join(copy, 'sluice.db'));
      copyFileSync(walFile, join(copy, 'sluice.db-wal'));
      const { pageSize, commits } = walCommits(join(copy, 'sluice.db-wal'), marker);
      if (readFileSync(join(copy, 'sluice.db-wal')).subarray(16, 24).toString('hex') !== saltsBefore) {
        throw new Error(`the WAL was checkpointed during the load (its salts changed): lower BENCH_WAL_EVENTS (marker ${marker}, now ${walCommits(join(copy, 'sluice.db-wal')).end})`);
      }
      const db = new Database(join(copy, 'sluice.db'));
      const owner = new Map((db.prepare('SELECT name, pageno, pagetype FROM dbstat').all() as { name: string; pageno: number; pagetype: string }[])
        .map((r) => [r.pageno, r.pagetype === 'internal' ? `${r.name} (interior)` : r.name]));
      db.close();
      const frames = commits.reduce((n, c) => n + c.length, 0);
      const delivered = phase.delivered;
      log(`  ${delivered} events delivered at ${rate}/s: ${frames} pages of ${pageSize} bytes written in ${commits.length} commits, ` +
        `${(frames / delivered).toFixed(1)} pages and ${(commits.length / delivered).toFixed(2)} commits per event`);
      const by = new Map<string, number>();
      for (const c of commits) for (const p of c) by.set(owner.get(p) ?? '(free now)', (by.get(owner.get(p) ?? '(free now)') ?? 0) + 1);
      for (const [name, n] of [...by].sort((a, b) => b[1] - a[1])) log(`    ${(n / delivered).toFixed(2).padStart(6)} per event  ${name}`);
    } finally {
      load.close();
    }
  } finally {
    await server.kill();
    server.removeDataDir();
    rmSync(copy, { recursive: true, force: true });
    await receiver.stop();
  }
}
