import { closeSync, fdatasyncSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lightSyncDir, openWalSync } from '../libs/event-store/src/wal-sync';

const WAL_BYTES = 4 << 20;
const WRITE_BYTES = 16 << 10;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function spin(us: number): void {
  const until = process.hrtime.bigint() + BigInt(Math.round(us * 1000));
  while (process.hrtime.bigint() < until) { /* the commit's other work */ }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/**
 * The WAL's sync alone (`BENCH_ONLY=walsync`): a stand-in WAL of 4 MiB (a 32-byte header that
 * never changes, so the light sync's rule holds), 16 KiB written in place then synced,
 * `BENCH_WALSYNC_SYNCS` times (default 300) 5 ms apart as at 200 events/s, with
 * `BENCH_WALSYNC_WORK_US` (default 100) of work between the write and the sync (a commit's side
 * effects), each way in turn for `BENCH_WALSYNC_ROUNDS` rounds (default 3): `fdatasync`, the light
 * sync (`native/wal-sync.c`), the light sync with the writeback started right after the write, and
 * (where the kernel allows io_uring) the light sync started on io_uring right after the write and
 * waited for after the work, as the store does on the event loop.
 * Per sync: voluntary context switches (waits), CPU, and the time from the write to synced.
 */
export async function benchWalSync(log: (s: string) => void): Promise<void> {
  const { dir, reason } = lightSyncDir([tmpdir(), process.cwd()], 'sluice-walsync-');
  if (!dir) {
    log(`  skipped: the light sync is not allowed here (${reason})`);
    return;
  }
  const syncs = Number(process.env.BENCH_WALSYNC_SYNCS ?? 300);
  const rounds = Number(process.env.BENCH_WALSYNC_ROUNDS ?? 3);
  const workUs = Number(process.env.BENCH_WALSYNC_WORK_US ?? 100);
  const file = join(dir, 'bench.db');
  writeFileSync(`${file}-wal`, Buffer.alloc(WAL_BYTES, 1));
  const fd = openSync(`${file}-wal`, 'r+');
  fdatasyncSync(fd);
  // The ring asked for: the io_uring way is one of those measured.
  const light = openWalSync(file, fd, () => {}, true);
  if (!light) {
    log('  skipped: the light sync library is not built');
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  // The reference for the light sync's rule: one full sync of the file as it is.
  light.sync();
  const page = Buffer.alloc(WRITE_BYTES, 7);
  let offset = 32;
  // What each way does right after the write (before the work), and for its sync.
  const ring = light.ringUnavailable() === null;
  const ways: [string, () => void, () => void][] = [
    ['fdatasync', () => {}, () => fdatasyncSync(fd)],
    ['light sync', () => {}, () => light.sync()],
    ['light sync, writeback at the write', () => light.writeback(), () => light.sync()],
  ];
  // As the store does on the loop: the writeback, and the sync started on io_uring, at the write.
  let started = false;
  if (ring) {
    ways.push(['light sync started at the write (io_uring)', () => {
      light.writeback();
      started = light.start();
    }, () => (started ? light.finish() : light.sync())]);
  } else log(`  (no io_uring here: ${light.ringUnavailable()})`);
  const results = new Map<string, { waits: number[]; cpu: number[]; ms: number[] }>(ways.map(([name]) => [name, { waits: [], cpu: [], ms: [] }]));
  try {
    for (let round = 0; round < rounds; round++) {
      for (const [name, atWrite, sync] of ways) {
        let waits = 0;
        let cpu = 0;
        let ms = 0;
        for (let i = 0; i < syncs; i++) {
          await sleep(5);
          const before = process.resourceUsage();
          const t0 = process.hrtime.bigint();
          writeSync(fd, page, 0, page.length, offset);
          offset += page.length;
          if (offset + page.length > WAL_BYTES) offset = 32;
          atWrite();
          spin(workUs);
          sync();
          const t1 = process.hrtime.bigint();
          const after = process.resourceUsage();
          waits += after.voluntaryContextSwitches - before.voluntaryContextSwitches;
          cpu += after.userCPUTime + after.systemCPUTime - before.userCPUTime - before.systemCPUTime - workUs;
          ms += Number(t1 - t0) / 1e6;
        }
        const r = results.get(name)!;
        r.waits.push(waits / syncs);
        r.cpu.push(cpu / syncs);
        r.ms.push(ms / syncs);
      }
    }
  } finally {
    light.close();
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  log(`  ${syncs} syncs x ${rounds} rounds each way, 5 ms apart, ${WRITE_BYTES >> 10} KiB written in place then ${workUs} us of work before the sync (medians of the rounds' means)`);
  const base = results.get('fdatasync')!;
  for (const [name] of ways) {
    const r = results.get(name)!;
    log(`  ${name.padEnd(36)} waits ${median(r.waits).toFixed(2)} per sync, CPU ${median(r.cpu).toFixed(0)} us (excluding the work), write to synced ${(median(r.ms) * 1000).toFixed(0)} us (${(median(r.ms) / median(base.ms)).toFixed(2)}x fdatasync's)`);
  }
  const counts = light.counts();
  log(`  light syncs ${counts.light}, full ${counts.full} (the first is the reference), started on io_uring ${counts.started}`);
}
