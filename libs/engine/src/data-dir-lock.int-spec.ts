import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DataDirInUseError, lockDataDir } from './data-dir-lock';

const SQLITE = resolve(__dirname, '..', '..', '..', 'node_modules', 'better-sqlite3');

/** Tries the lock's exclusive transaction from another process; true when it got it. */
function otherProcessGetsLock(dir: string): boolean {
  const script = `
    const Database = require(${JSON.stringify(SQLITE)});
    const db = new Database(${JSON.stringify(join(dir, 'server.lock'))}, { timeout: 0 });
    try { db.exec('BEGIN EXCLUSIVE'); process.stdout.write('got'); } catch (e) { process.stdout.write(e.code); }`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout === 'got';
}

describe('lockDataDir', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-lock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a second attempt, in this process or another, fails at once until the holder releases', () => {
    const lock = lockDataDir(dir);
    expect(() => lockDataDir(dir)).toThrow(DataDirInUseError);
    // The failed attempt closed its connection: the first holder must still hold the lock.
    expect(otherProcessGetsLock(dir)).toBe(false);
    expect(() => lockDataDir(dir)).toThrow(/in use by a running Sluice server.*\(pid \d+\)/);
    lock.release();
    expect(otherProcessGetsLock(dir)).toBe(true);
    lockDataDir(dir).release();
  });

  it('a holder file naming a live process (this one) is not a lock', () => {
    writeFileSync(join(dir, 'server.pid'), `${process.pid}\n`);
    const lock = lockDataDir(dir);
    lock.release();
  });

  it('a lock file with foreign content is reported, never overwritten', () => {
    writeFileSync(join(dir, 'server.lock'), 'not a lock');
    expect(() => lockDataDir(dir)).toThrow(/not a Sluice lock file/);
  });
});
