import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteEventStore, loadWalBuffer, walBufferStats, type NewEvent } from '@app/event-store';

/**
 * The SQLite extension that writes a commit's WAL frames in one call
 * (`libs/event-store/native/wal-buffer.c`, built into `dist/native/wal-buffer.so` by
 * `scripts/build.mjs`, which `npm test` runs first). Real SQLite files, a real child process
 * killed with SIGKILL.
 */
/** The compiled loader, for the child processes (plain Node, no test transform). */
const LOADER = join(__dirname, '..', '..', '..', 'dist', 'libs', 'event-store', 'src', 'wal-buffer.js');

describe('WAL frames written in one call per commit (wal-buffer extension)', () => {
  let dir: string;
  beforeAll(() => {
    const state = loadWalBuffer();
    if (!state.loaded) throw new Error(`the extension did not load: ${state.reason}`);
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-walbuf-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('is the VFS of the store, and a commit of many pages reaches the WAL in one or two writes', async () => {
    const store = new SqliteEventStore({ file: join(dir, 'events.db'), synchronous: 'full' });
    const db = (store as unknown as { db: Database.Database }).db;
    try {
      // Events of about 3 KB each: a group of 20 writes dozens of pages.
      const big: NewEvent[] = Array.from({ length: 20 }, (_, i) => ({ type: 'test.big.v1', data: { i, text: 'x'.repeat(3000) } }));
      // The WAL's first pass, which extends the file, is written a page per call (see the next
      // test); after a checkpoint that restarts it, commits write over the pages written before.
      for (let round = 0; round < 10; round++) await store.append(`first-${round}`, big);
      db.pragma('wal_checkpoint(RESTART)');
      await store.append('warm', [{ type: 'test.warm.v1', data: {} }]);
      const before = walBufferStats(db)!;
      for (let round = 0; round < 10; round++) await store.append(`s-${round}`, big);
      const after = walBufferStats(db)!;
      const asked = after.writesAsked - before.writesAsked;
      const made = after.writesMade - before.writesMade;
      // SQLite asks for two writes per frame; at least 20 frames per commit here.
      expect(asked).toBeGreaterThanOrEqual(10 * 2 * 20);
      // One write for the gathered frames (128 KiB each at most, so a commit of 60-odd pages
      // takes two or three), and one written through after the transaction's reads.
      expect(made).toBeLessThanOrEqual(10 * 4);
      const events = await store.readStream('s-9');
      expect(events).toHaveLength(20);
      expect((events[19].data as { text: string }).text).toHaveLength(3000);
    } finally {
      await store.close();
    }
    // Reopened: everything is there, and the file is sound.
    const check = new Database(join(dir, 'events.db'), { readonly: true });
    try {
      expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(check.prepare("SELECT count(*) FROM events WHERE stream LIKE 's-%'").pluck().get()).toBe(200);
      expect(check.prepare("SELECT count(*) FROM events WHERE stream LIKE 'first-%'").pluck().get()).toBe(200);
    } finally {
      check.close();
    }
  });

  it('a transaction rolled back after its pages spilled into the WAL does not spoil a later commit of another connection', () => {
    const file = join(dir, 'spill.db');
    const a = new Database(file);
    const b = new Database(file);
    try {
      a.pragma('journal_mode = WAL');
      a.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE INDEX t_v ON t (v)');
      a.pragma('cache_size = 20');
      const insertA = a.prepare('INSERT INTO t (v) VALUES (?)');
      a.transaction(() => { for (let i = 0; i < 50; i++) insertA.run(`kept-${i}`); })();
      // A's transaction is larger than its cache, so SQLite writes some of its pages into the WAL
      // before the commit; then it is rolled back.
      const before = walBufferStats(a)!;
      expect(() => a.transaction(() => {
        for (let i = 0; i < 5000; i++) insertA.run(`gone-${i}-${'y'.repeat(200)}`);
        throw new Error('roll back');
      })()).toThrow('roll back');
      expect(walBufferStats(a)!.writesAsked - before.writesAsked).toBeGreaterThan(100);
      // B commits over the frames A left behind.
      const insertB = b.prepare('INSERT INTO t (v) VALUES (?)');
      b.transaction(() => { for (let i = 0; i < 300; i++) insertB.run(`b-${i}-${'z'.repeat(100)}`); })();
      // A reads and writes again; nothing it gathered may land over B's frames.
      expect(a.prepare('SELECT count(*) FROM t').pluck().get()).toBe(350);
      a.transaction(() => { for (let i = 0; i < 10; i++) insertA.run(`a-again-${i}`); })();
    } finally {
      a.close();
      b.close();
    }
    const check = new Database(file, { readonly: true });
    try {
      expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(check.prepare("SELECT count(*) FROM t WHERE v LIKE 'gone-%'").pluck().get()).toBe(0);
      expect(check.prepare("SELECT count(*) FROM t WHERE v LIKE 'b-%'").pluck().get()).toBe(300);
      expect(check.prepare('SELECT count(*) FROM t').pluck().get()).toBe(360);
    } finally {
      check.close();
    }
  });

  // Bytes the kernel counts as dirtied (write_bytes of /proc/<pid>/io, which is what writeback
  // writes) for the same commits through SQLite's own VFS and through the extension, each in a
  // child process: commits of about 15 pages with an fdatasync after each, a checkpoint that
  // restarts the WAL, and as many commits again over the pages of the first pass. Written in one
  // call where the WAL's file did not reach yet, its page cache got folios the size of a commit,
  // and each commit's first bytes dirtied the whole folio its predecessor ended in: about 17%
  // more written back here (Linux 6.18, ext4). Where a kernel keeps no such count, both read 0.
  it('costs no more bytes written back than SQLite writing the same commits itself', async () => {
    const script = join(dir, 'dirtier.js');
    writeFileSync(script, `
      const fs = require('node:fs');
      const Database = require(${JSON.stringify(require.resolve('better-sqlite3'))});
      if (process.argv[3] === 'on' && !require(${JSON.stringify(LOADER)}).loadWalBuffer().loaded) process.exit(3);
      const db = new Database(process.argv[2]);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.exec('CREATE TABLE e (pos INTEGER PRIMARY KEY, id TEXT, stream TEXT, v TEXT); CREATE UNIQUE INDEX e_id ON e (id); CREATE INDEX e_s ON e (stream, pos)');
      const wal = fs.openSync(process.argv[2] + '-wal', 'r');
      const insert = db.prepare('INSERT INTO e (id, stream, v) VALUES (?, ?, ?)');
      const commit = db.transaction((i) => { for (let j = 0; j < 12; j++) insert.run(i + '-' + j + '-' + Math.random(), 'stream-' + (j % 4), 'v'.repeat(1500)); });
      const dirtied = () => Number((/write_bytes: (\\d+)/.exec(fs.readFileSync('/proc/self/io', 'utf8')) || [0, 0])[1]);
      for (let i = 0; i < 300; i++) { commit(i); fs.fdatasyncSync(wal); }
      db.pragma('wal_checkpoint(RESTART)');
      const before = dirtied();
      for (let i = 300; i < 600; i++) { commit(i); fs.fdatasyncSync(wal); }
      process.stdout.write(String(dirtied() - before));
    `);
    const run = (mode: 'on' | 'off') => new Promise<number>((resolve, reject) => {
      const child = spawn(process.execPath, [script, join(dir, `dirty-${mode}.db`), mode], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => { out += chunk; });
      child.on('close', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`the ${mode} child exited with ${code}`))));
    });
    const own = await run('off');
    const gathered = await run('on');
    expect(Number.isFinite(own) && Number.isFinite(gathered)).toBe(true);
    expect(gathered).toBeLessThanOrEqual(own * 1.03 + 64 * 1024);
  }, 120_000);

  // A writer in a child process says each transaction's number once COMMIT has returned; it is
  // killed at a random moment, and every number it said must be in the file. Both locking modes:
  // with exclusive locking no WAL-index lock ends a transaction, so only the commit frame's own
  // write puts the gathered frames into the file before COMMIT returns.
  for (const locking of ['normal', 'exclusive'] as const) {
    it(`every commit acknowledged before a SIGKILL is in the file (${locking} locking, 10 kills)`, async () => {
      const file = join(dir, 'crash.db');
      const script = join(dir, 'writer.js');
      writeFileSync(script, `
        const Database = require(${JSON.stringify(require.resolve('better-sqlite3'))});
        const { loadWalBuffer } = require(${JSON.stringify(LOADER)});
        if (!loadWalBuffer().loaded) process.exit(3);
        const db = new Database(process.argv[2]);
        if (process.argv[3] === 'exclusive') db.pragma('locking_mode = EXCLUSIVE');
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = NORMAL');
        db.exec('CREATE TABLE IF NOT EXISTS t (n INTEGER, i INTEGER, v TEXT, PRIMARY KEY (n, i)); CREATE INDEX IF NOT EXISTS t_v ON t (v)');
        let n = (db.prepare('SELECT max(n) FROM t').pluck().get() ?? -1) + 1;
        const insert = db.prepare('INSERT INTO t VALUES (?, ?, ?)');
        const rows = db.transaction((n) => { for (let i = 0; i < 12; i++) insert.run(n, i, n + '-' + i + '-' + Math.random().toString(36).repeat(20)); });
        for (;;) { rows(n); require('node:fs').writeSync(1, n + '\\n'); n++; }
      `);
      let acknowledged = -1;
      for (let kill = 0; kill < 10; kill++) {
        const child = spawn(process.execPath, [script, file, locking], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.setEncoding('utf8');
        child.stdout.on('data', (chunk: string) => { out += chunk; });
        const ended = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
        // Wait for it to be writing, then a random moment.
        while (!out.includes('\n')) await new Promise((r) => setTimeout(r, 5));
        await new Promise((r) => setTimeout(r, 20 + Math.floor(Math.random() * 150)));
        child.kill('SIGKILL');
        expect(await ended).toBeNull();
        const said = out.split('\n').filter(Boolean).map(Number);
        expect(said.length).toBeGreaterThan(0);
        acknowledged = Math.max(acknowledged, ...said);
        const check = new Database(file);
        try {
          if (locking === 'normal') expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
          const present = new Set(check.prepare('SELECT n FROM t GROUP BY n HAVING count(*) = 12').pluck().all() as number[]);
          const missing = said.filter((n) => !present.has(n));
          expect(missing).toEqual([]);
          expect(check.prepare('SELECT count(DISTINCT n) FROM t').pluck().get()).toBe(present.size);
          expect(present.size).toBeGreaterThan(acknowledged);
          if (locking === 'exclusive') expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
        } finally {
          check.close();
        }
      }
    }, 120_000);
  }
});
