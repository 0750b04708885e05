import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { SecretBox } from '@app/domain';
import { lockDataDir } from '@app/engine';
import Database from 'better-sqlite3';
import { api, eventually, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';
import { ECHO_SOURCE } from './support/fixtures';

const KEYRING = resolve(__dirname, '..', 'dist', 'libs', 'engine', 'src', 'keyring.js');
const ONE_WORKER = { SLUICE_SANDBOX_WORKERS: '1' };

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Direct children of a process (Linux). */
function childrenOf(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

describe('one process per data directory, held by an OS lock', () => {
  const dirs: string[] = [];
  const fresh = () => {
    const d = newDataDir();
    dirs.push(d);
    return d;
  };
  afterAll(() => dirs.forEach(removeDataDir));

  it('two servers started at the same moment on one data dir: exactly one runs, every time (8 trials)', async () => {
    for (let trial = 0; trial < 8; trial++) {
      const dir = fresh();
      const results = await Promise.allSettled([startSluice({ dataDir: dir, env: ONE_WORKER }), startSluice({ dataDir: dir, env: ONE_WORKER })]);
      const running = results.filter((r): r is PromiseFulfilledResult<SluiceProcess> => r.status === 'fulfilled').map((r) => r.value);
      const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      await Promise.all(running.map((s) => s.stop()));
      expect({ trial, running: running.length }).toEqual({ trial, running: 1 });
      expect(String(refused[0].reason)).toMatch(/in use by a running Sluice server/);
    }
  });

  it('a holder file naming a live unrelated process (the test runner) does not prevent a start', async () => {
    const dir = fresh();
    writeFileSync(join(dir, 'server.pid'), `${process.pid}\n`);
    const server = await startSluice({ dataDir: dir, env: ONE_WORKER });
    expect((await api(server.url, server.apiKey).get('/v1/users/me')).status).toBe(200);
    await server.stop();
  });

  it('a restart right after SIGKILL comes up, while the killed server\'s sandbox workers are still alive', async () => {
    const dir = fresh();
    const first = await startSluice({ dataDir: dir, env: { SLUICE_SANDBOX_WORKERS: '2', SLUICE_SANDBOX_MIN_WORKERS: '2' } });
    const workers = childrenOf(first.proc.pid!);
    expect(workers).toHaveLength(2);
    // Stopped workers cannot exit when their parent dies: if they kept the lock, the restart would be refused.
    for (const w of workers) process.kill(w, 'SIGSTOP');
    try {
      await first.kill();
      const second = await startSluice({ dataDir: dir, env: ONE_WORKER });
      expect(workers.every(alive)).toBe(true);
      expect((await api(second.url, second.apiKey).get('/v1/users/me')).status).toBe(200);
      await second.stop();
    } finally {
      for (const w of workers) if (alive(w)) process.kill(w, 'SIGKILL');
    }
  });

  it('while another process holds the directory (as an admin command does), a server and admin commands refuse', async () => {
    const dir = fresh();
    const lock = lockDataDir(dir);
    try {
      await expect(startSluice({ dataDir: dir, env: ONE_WORKER })).rejects.toThrow(new RegExp(`in use by a running Sluice server.*pid ${process.pid}`));
      await expect(runAdmin(dir, ['create-account', '--name', 'x'])).rejects.toThrow(/in use by a running Sluice server/);
    } finally {
      lock.release();
    }
    const created = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'x']));
    expect(created.account_id).toMatch(/^u_/);
  });

  it('master.key: processes creating it at the same moment all get the one key that is on disk (10 rounds of 8)', async () => {
    // Each child waits for the same instant, loads the keyring and seals a probe with its key.
    const child = (dir: string, start: number, i: number) => promisify(execFile)(process.execPath, ['-e', `
      const { loadSecretBox } = require(${JSON.stringify(KEYRING)});
      while (Date.now() < ${start}) {}
      process.stdout.write(JSON.stringify(loadSecretBox(${JSON.stringify(dir)}).seal('probe-${i}')));`]);
    for (let round = 0; round < 10; round++) {
      const dir = fresh();
      const start = Date.now() + 400;
      const outs = await Promise.all(Array.from({ length: 8 }, (_, i) => child(dir, start, i)));
      const onDisk = new SecretBox(Buffer.from(readFileSync(join(dir, 'keys', 'master.key'), 'utf8').trim(), 'base64'));
      expect({ round, opened: outs.map((o, i) => onDisk.open(JSON.parse(o.stdout)) === `probe-${i}`) }).toEqual({ round, opened: outs.map(() => true) });
    }
  });
});

describe('data files are private: 0600 files in 0700 directories', () => {
  let server: SluiceProcess;
  let umask: number;

  beforeAll(async () => {
    umask = process.umask(0o022);
    // A directory that does not exist yet, so the server creates it (mkdtemp would make it 0700 already).
    server = await startSluice({ dataDir: join(newDataDir(), 'nested', 'data') });
  });
  afterAll(async () => {
    process.umask(umask);
    await server?.stop();
    if (server) removeDataDir(join(server.dataDir, '..', '..'));
  });

  it('the data dir, the database with its WAL files, the keys, the lock and the package cache', async () => {
    const c = api(server.url, server.apiKey);
    // Writes, so the WAL holds frames, and a saved component, so the package cache exists.
    expect((await c.post('/v1/webhooks', { url: 'http://127.0.0.1:9/x', name: 'x' })).status).toBe(200);
    expect((await c.post('/v1/sources', { component_code: ECHO_SOURCE })).status).toBe(200);
    const mode = (p: string) => (statSync(join(server.dataDir, p)).mode & 0o777).toString(8);
    // Normal locking (the default) keeps the WAL index in the -shm file, for the background checkpoint's connection.
    expect(existsSync(join(server.dataDir, 'sluice.db-shm'))).toBe(true);
    expect({
      dir: mode('.'), parent: mode('..'), db: mode('sluice.db'), wal: mode('sluice.db-wal'), shm: mode('sluice.db-shm'),
      apiKey: mode('api-key'), keys: mode('keys'), masterKey: mode('keys/master.key'),
      lock: mode('server.lock'), holder: mode('server.pid'), packages: mode('packages'),
    }).toEqual({
      dir: '700', parent: '700', db: '600', wal: '600', shm: '600',
      apiKey: '600', keys: '700', masterKey: '600',
      lock: '600', holder: '600', packages: '700',
    });
    // The empty file whose fdatasync flushes the disk's cache for the WAL's light sync (on
    // ext2/3/4, as here; elsewhere the WAL is synced with fdatasync and the file is not made).
    if (existsSync(join(server.dataDir, 'sluice.db-flush'))) expect(mode('sluice.db-flush')).toBe('600');
    else console.warn('data-dir: no sluice.db-flush here (the WAL is synced with fdatasync on this filesystem)');
  });
});

describe('SLUICE_SQLITE_PAGE_SIZE', () => {
  const pageSizeOf = (file: string): number => {
    const db = new Database(file, { readonly: true });
    try {
      return db.pragma('page_size', { simple: true }) as number;
    } finally {
      db.close();
    }
  };
  const text = 'x'.repeat(6_000);
  const post = async (endpointUrl: string, n: number) => {
    const r = await fetch(endpointUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n, text }) });
    expect(r.status).toBe(200);
  };
  const emitted = (server: SluiceProcess, sourceId: string, atLeast: number) => eventually(async () => {
    const r = await api(server.url, server.apiKey).get(`/v1/sources/${sourceId}/event_summaries`, { expand: 'event', limit: '100' });
    const events = (r.body?.data ?? []) as { event: { n: number; text: string } }[];
    return events.length >= atLeast ? events.map((e) => e.event).reverse() : undefined;
  }, 20_000, `${atLeast} events`);

  it('a new data dir gets the page size asked for; a restart asking for another keeps the file\'s, and everything in it', async () => {
    const dir = newDataDir();
    try {
      const first = await startSluice({ dataDir: dir, env: { ...ONE_WORKER, SLUICE_SQLITE_PAGE_SIZE: '2048' } });
      let sourceId = '';
      let endpointUrl = '';
      try {
        const src = await api(first.url, first.apiKey).post('/v1/sources', { component_code: ECHO_SOURCE });
        expect(src.status).toBe(200);
        sourceId = src.body.data.id;
        endpointUrl = src.body.data.endpoint_url;
        // Bodies of 6 KB: each event spans several 2 KiB pages.
        for (let n = 1; n <= 3; n++) await post(endpointUrl, n);
        expect((await emitted(first, sourceId, 3))!.map((e) => [e.n, e.text.length])).toEqual([[1, 6_000], [2, 6_000], [3, 6_000]]);
      } finally {
        await first.stop();
      }
      expect(pageSizeOf(join(dir, 'sluice.db'))).toBe(2048);

      const second = await startSluice({ dataDir: dir, env: { ...ONE_WORKER, SLUICE_SQLITE_PAGE_SIZE: '8192' } });
      try {
        expect((await emitted(second, sourceId, 3))!.map((e) => e.n)).toEqual([1, 2, 3]);
        await post(new URL(new URL(endpointUrl).pathname, second.url).href, 4);
        expect((await emitted(second, sourceId, 4))!.map((e) => [e.n, e.text === text])).toEqual([[1, true], [2, true], [3, true], [4, true]]);
      } finally {
        await second.stop();
      }
      expect(pageSizeOf(join(dir, 'sluice.db'))).toBe(2048);
    } finally {
      removeDataDir(dir);
    }
  });

  it('refuses a size SQLite would ignore, naming the variable', async () => {
    await expect(startSluice({ env: { SLUICE_SQLITE_PAGE_SIZE: '3000' } })).rejects.toThrow(/SLUICE_SQLITE_PAGE_SIZE: expected a power of two from 512 to 65536, got "3000"/);
  });
});
