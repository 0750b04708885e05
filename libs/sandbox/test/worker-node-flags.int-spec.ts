import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SandboxSupervisor } from '@app/sandbox';
import { WORKER_NODE_FLAGS, WORKER_SEMI_SPACE_MB } from '../src/worker-node.flags';
import { component, invocation } from './sandbox-test.helper';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
const MB = 1024 * 1024;

/**
 * A child node process started with `flags`, doing what a worker does in order: (optionally) take
 * back the host-only flags with the compiled `releaseHostOnlyFlags`, create an isolate as the pool
 * does (128 MB), then make garbage in its own heap. Reports the isolate's heap limit (V8 adds the
 * young generation it was configured with to the old generation's 128 MB, so it shows which
 * young generation the isolate got, exactly) and the size its own young generation grew to.
 */
async function heaps(flags: readonly string[], release: boolean): Promise<{ guestLimit: number; hostYoung: number }> {
  const script = `
    const v8 = require('node:v8');
    if (${release}) require(${JSON.stringify(join(ROOT, 'dist/libs/sandbox/src/worker-node.flags.js'))}).releaseHostOnlyFlags();
    const ivm = require(${JSON.stringify(join(ROOT, 'node_modules/isolated-vm'))});
    const iso = new ivm.Isolate({ memoryLimit: 128 });
    const guestLimit = iso.getHeapStatisticsSync().heap_size_limit;
    let k = []; for (let i = 0; i < 3e6; i++) { k.push({ i }); if (k.length > 1e5) k = []; }
    const hostYoung = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
    process.stdout.write(JSON.stringify({ guestLimit, hostYoung }));
  `;
  return JSON.parse((await run(process.execPath, [...flags, '-e', script])).stdout);
}

describe('sandbox worker node flags', () => {
  it('cap the worker\'s own young generation and leave the isolates\' as isolated-vm sizes them', async () => {
    const [worker, plain, unreleased] = await Promise.all([
      heaps(WORKER_NODE_FLAGS, true),
      heaps(['--no-node-snapshot'], false),
      heaps(WORKER_NODE_FLAGS, false),
    ]);
    // Without the cap the worker's own young generation grows to two 16 MB semi-spaces.
    expect(plain.hostYoung).toBeGreaterThan(2 * WORKER_SEMI_SPACE_MB * MB);
    expect(worker.hostYoung).toBeLessThanOrEqual(2 * WORKER_SEMI_SPACE_MB * MB);
    // The isolate is configured as without the flags (isolated-vm's young generation)...
    expect(worker.guestLimit).toBe(plain.guestLimit);
    // ...and only because the flag was taken back: left in force, it would size the isolate too.
    expect(unreleased.guestLimit).toBeGreaterThan(plain.guestLimit);
  }, 60_000);

  const linux = process.platform === 'linux';
  (linux ? it : it.skip)('a real worker runs with them', async () => {
    if (!linux) console.log('skipped: reads the worker\'s command line from /proc (Linux only)');
    const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] } });
    await sandbox.start();
    try {
      const c = await component('export default { run(e) { return e.n } }');
      expect(await sandbox.invoke(invocation(c, { event: { n: 7 } }))).toMatchObject({ ok: true, returnValue: 7 });
      const args = readFileSync(`/proc/${sandbox.workerPids()[0]}/cmdline`, 'utf8').split('\0');
      for (const flag of WORKER_NODE_FLAGS) expect(args).toContain(flag);
    } finally {
      await sandbox.stop();
    }
  }, 60_000);
});
