import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

/**
 * Holds a SHARED lock on the lock file from another process, as a competing attempt does for a
 * moment on its way to EXCLUSIVE, and gives it up after `ms`. Resolves once the lock is held, with
 * a function that resolves to the moment (Date.now() of the other process) just before it was given up.
 */
async function otherProcessReadsFor(dir: string, ms: number): Promise<() => Promise<number>> {
  const script = `
    const Database = require(${JSON.stringify(SQLITE)});
    const db = new Database(${JSON.stringify(join(dir, 'server.lock'))}, { timeout: 0 });
    db.exec('BEGIN'); db.prepare('SELECT count(*) FROM sqlite_master').get();
    process.stdout.write('reading;');
    // The time is taken just before the release: an attempt granted the lock is granted after it.
    setTimeout(() => { const at = Date.now(); db.exec('COMMIT'); process.stdout.write('released at ' + at); db.close(); }, ${ms});`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  while (!out.includes('reading;')) await once(child.stdout!, 'data');
  return async () => {
    if (child.exitCode === null) await once(child, 'exit');
    const m = /released at (\d+)/.exec(out);
    if (!m) throw new Error(`the reader did not report its release: ${out}`);
    return Number(m[1]);
  };
}

const BUILT = resolve(__dirname, '..', '..', '..', 'dist', 'libs', 'engine', 'src', 'data-dir-lock.js');

/** Starts `n` processes that call `lockDataDir` at the same instant; each reports `got` or the error's name. */
async function simultaneousAttempts(dir: string, n: number): Promise<string[]> {
  const at = Date.now() + 500;
  const script = `
    const { lockDataDir } = require(${JSON.stringify(BUILT)});
    while (Date.now() < ${at}) {}
    let lock;
    try { lock = lockDataDir(${JSON.stringify(dir)}); process.stdout.write('got'); } catch (e) { process.stdout.write(e.name); }
    // The holder keeps the lock until every other attempt has had its answer.
    process.stdin.on('end', () => lock?.release()).resume();`;
  const children = Array.from({ length: n }, () => spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] }));
  const answers = await Promise.all(children.map(async (c) => String(((await once(c.stdout!, 'data')) as [Buffer])[0])));
  for (const c of children) c.stdin!.end();
  await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
  return answers;
}

describe('lockDataDir', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-lock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a second attempt, in this process or another, is refused until the holder releases', () => {
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

  it('an attempt that meets a competing attempt\'s passing SHARED lock waits it out and gets the directory', async () => {
    const released = await otherProcessReadsFor(dir, 300);
    const tried = Date.now();
    // Without a busy timeout this threw DataDirInUseError at once: the race in which two servers
    // started together both exited.
    const lock = lockDataDir(dir);
    const granted = Date.now();
    expect(otherProcessGetsLock(dir)).toBe(false);
    lock.release();
    const releasedAt = await released();
    // The attempt met the reader (else this test proved nothing) and was granted once it had left.
    expect(tried).toBeLessThan(releasedAt);
    expect(granted).toBeGreaterThanOrEqual(releasedAt);
  });

  it('processes that try at the same instant: exactly one gets the directory, the other is refused (12 trials)', async () => {
    if (!existsSync(BUILT)) throw new Error(`${BUILT} is missing: run npm run build (npm test does it first)`);
    for (let trial = 0; trial < 12; trial++) {
      const trialDir = mkdtempSync(join(tmpdir(), 'sluice-lock-race-'));
      try {
        const answers = await simultaneousAttempts(trialDir, 2);
        expect({ trial, answers: answers.sort() }).toEqual({ trial, answers: ['DataDirInUseError', 'got'] });
      } finally {
        rmSync(trialDir, { recursive: true, force: true });
      }
    }
  });
});
