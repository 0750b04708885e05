import { spawn } from 'node:child_process';
import { closeSync, fdatasyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** CPU one timer wake-up of an otherwise idle Node process costs on this machine (median of 3 x 200, us). */
export async function wakeUpCost(): Promise<number> {
  const runs: number[] = [];
  for (let r = 0; r < 3; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < 200; i++) await new Promise((res) => setTimeout(res, 4));
    const c = process.cpuUsage(c0);
    runs.push((c.user + c.system) / 200);
  }
  return runs.sort((a, b) => a - b)[1];
}

/**
 * How long this disk takes to make 64 KiB durable (a commit's WAL frames at 200 events/s are
 * about that): a write then an `fdatasync` of a file in the temporary directory, 200 times, 5 ms
 * apart; median and 99th percentile, ms.
 */
export async function fdatasyncCost(): Promise<{ p50: number; p99: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-disk-'));
  const fd = openSync(join(dir, 'probe'), 'w');
  const block = Buffer.alloc(64 * 1024, 1);
  const ms: number[] = [];
  try {
    for (let i = 0; i < 200; i++) {
      writeSync(fd, block, 0, block.length, (i % 16) * block.length);
      const t0 = performance.now();
      fdatasyncSync(fd);
      ms.push(performance.now() - t0);
      await new Promise((res) => setTimeout(res, 5));
    }
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  ms.sort((a, b) => a - b);
  return { p50: ms[100], p99: ms[197] };
}

/** CPU (user + system) of process `pid` so far, us, from /proc (10 ms ticks). */
function processCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/**
 * What a hand-off between two processes costs here, the thing Sluice and the relay floor pay
 * several times per event (server -> worker -> server, loop -> disk -> loop): a byte sent through
 * a pipe to a child Node process that writes it back, 1,000 times, 2 ms apart (so both sleep in
 * between, as at everyday rates). CPU of both processes per round trip and the median round trip.
 */
export async function handOffCost(): Promise<{ cpuUs: number; medianUs: number }> {
  const child = spawn(process.execPath, ['-e', 'process.stdin.on("data", (d) => process.stdout.write(d))'], { stdio: ['pipe', 'pipe', 'ignore'] });
  const byte = Buffer.from([1]);
  const once = () => new Promise<number>((res) => {
    const t0 = performance.now();
    child.stdout!.once('data', () => res(performance.now() - t0));
    child.stdin!.write(byte);
  });
  try {
    for (let i = 0; i < 100; i++) await once();
    const rounds = 1000;
    const times: number[] = [];
    const own0 = process.cpuUsage();
    const child0 = processCpuUs(child.pid!);
    for (let i = 0; i < rounds; i++) {
      times.push(await once());
      await new Promise((res) => setTimeout(res, 2));
    }
    const own = process.cpuUsage(own0);
    const childUs = processCpuUs(child.pid!) - child0;
    times.sort((a, b) => a - b);
    // The parent's share includes its 2 ms timer's wake-up: kept, since in a real hand-off both
    // sides also wake from a sleep, which is what this weighs.
    return { cpuUs: (own.user + own.system + childUs) / rounds, medianUs: times[rounds / 2] * 1000 };
  } finally {
    child.kill();
  }
}

/**
 * One line on the machine's day: what a wake-up and an fsync cost now. Tables from different days
 * differ by these as much as by the code (a timer wake-up has cost 46 us on a quiet day and over
 * 250 us on a slow one), so each table prints them.
 */
export async function machineDayLine(): Promise<string> {
  const wake = await wakeUpCost();
  const disk = await fdatasyncCost();
  const hand = await handOffCost();
  return `machine now: an idle Node timer wake-up costs ${wake.toFixed(0)} us of CPU (median of 3 x 200); ` +
    `a round trip to another process through pipes ${hand.cpuUs.toFixed(0)} us of CPU in both (median ${hand.medianUs.toFixed(0)} us, 1,000 of them 2 ms apart); ` +
    `write + fdatasync of 64 KiB takes ${disk.p50.toFixed(2)} ms (p99 ${disk.p99.toFixed(2)} ms, 200 of them)`;
}
