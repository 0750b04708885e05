import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { writeStatements } from '../src/write-statements';
import { SqliteEventStore } from '../src/sqlite-event-store';
import { DuplicateEventIdError } from '../src/errors';

const DIST_WRITES = join(__dirname, '..', '..', '..', 'dist', 'libs', 'event-store', 'src', 'write-statements.js');

/** Descriptors this process holds open on `file` (a closed connection holds none). */
function openDescriptorsOn(file: string): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === file) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

describe('writeStatements (libs/event-store/native/lean-statements.c)', () => {
  let dir: string;
  let db: Database.Database;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-writes-'));
    db = new Database(join(dir, 'w.db'));
    db.pragma('journal_mode = WAL');
  });
  afterEach(() => {
    if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs through the lean library here (the build compiles it), one object per connection', () => {
    const writes = writeStatements(db);
    expect(writes.reason).toBeUndefined();
    expect(writes.lean).toBe(true);
    expect(writeStatements(db)).toBe(writes);
  });

  it('stores every kind of value exactly as better-sqlite3 binds it', () => {
    db.exec('CREATE TABLE a (i INTEGER, r REAL, t TEXT, b BLOB, x ANY) STRICT; CREATE TABLE b (i INTEGER, r REAL, t TEXT, b BLOB, x ANY) STRICT');
    const lean = writeStatements(db).prepare('INSERT INTO a VALUES (?, ?, ?, ?, ?)');
    const plain = db.prepare('INSERT INTO b VALUES (?, ?, ?, ?, ?)');
    const rows: unknown[][] = [
      [1, 1.5, 'plain ascii', Buffer.from([0, 1, 2, 255]), 42],
      [-7, -0, '', Buffer.alloc(0), 2.25],
      [2 ** 53, 1e300, 'é ü ß — “quotes” 日本語 😀', null, 'text in ANY'],
      [null, null, 'lone surrogate \ud800 and \udfff end', undefined, 9007199254740993n],
      [12345678901234n, 3, '"json": {"a": [1, 2]}\n\t\\', Buffer.from('bytes'), -1n],
      [1, 2, 'a real \ufffd, a pair 😀 and a lone \udc00 after \ud83d', Buffer.from('\ufffd'), '\ufffd'],
      [0, Number.MIN_VALUE, 'x'.repeat(100_000), Buffer.alloc(70_000, 7), 1e21],
    ];
    for (const row of rows) {
      expect(lean(...row)).toBe(1);
      plain.run(...row);
    }
    const read = (table: string) => db.prepare(`SELECT i, typeof(i) ti, r, typeof(r) tr, t, typeof(t) tt, b, typeof(b) tb, x, typeof(x) tx FROM ${table} ORDER BY rowid`).all();
    expect(read('a')).toEqual(read('b'));
    expect(read('a')).toHaveLength(rows.length);
  });

  it('returns the rows changed, 0 for an ignored insert', () => {
    db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID');
    const writes = writeStatements(db);
    const insert = writes.prepare('INSERT OR IGNORE INTO t (id, n) VALUES (?, ?)');
    expect(insert('a', 1)).toBe(1);
    expect(insert('a', 2)).toBe(0);
    expect(insert('b', 1)).toBe(1);
    expect(insert('c', 1)).toBe(1);
    expect(writes.prepare('UPDATE t SET n = n + 1 WHERE n = ?')(1)).toBe(3);
    expect(writes.prepare('DELETE FROM t WHERE id IN (?, ?)')('a', 'zz')).toBe(1);
    expect(db.prepare('SELECT id, n FROM t ORDER BY id').all()).toEqual([{ id: 'b', n: 2 }, { id: 'c', n: 2 }]);
  });

  it('throws SQLite\'s errors with better-sqlite3\'s codes and messages, and the statement runs again after one', () => {
    db.exec('CREATE TABLE t (id TEXT NOT NULL UNIQUE, n INTEGER) STRICT');
    const lean = writeStatements(db).prepare('INSERT INTO t (id, n) VALUES (?, ?)');
    const plain = db.prepare('INSERT INTO t (id, n) VALUES (?, ?)');
    lean('a', 1);
    const caught = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        return { code: (error as { code?: string }).code, message: (error as Error).message };
      }
      throw new Error('expected a throw');
    };
    for (const args of [['a', 2], [null, 2], ['b', 'not an integer']] as unknown[][]) {
      expect(caught(() => lean(...args))).toEqual(caught(() => plain.run(...args)));
    }
    expect(caught(() => lean('a', 2)).code).toBe('SQLITE_CONSTRAINT_UNIQUE');
    expect(caught(() => lean(null, 2)).code).toBe('SQLITE_CONSTRAINT_NOTNULL');
    expect(caught(() => lean('b', 'x')).code).toBe('SQLITE_CONSTRAINT_DATATYPE');
    expect(lean('b', 2)).toBe(1);
    expect(db.prepare('SELECT count(*) n FROM t').get()).toEqual({ n: 2 });
  });

  it('refuses what it cannot bind and a wrong count of parameters, binding nothing', () => {
    db.exec('CREATE TABLE t (a, b)');
    const lean = writeStatements(db).prepare('INSERT INTO t VALUES (?, ?)');
    // (By message: the errors come from the addon's realm, not the test's, so not `instanceof` here.)
    expect(() => lean(1, true)).toThrow(/can only bind numbers, strings, bigints, buffers, and null/);
    expect(() => lean(1, { a: 1 })).toThrow(/can only bind/);
    expect(() => lean(1)).toThrow(/takes 2 parameters, 1 were given/);
    expect(() => lean(1, 2, 3)).toThrow(/takes 2 parameters, 3 were given/);
    expect(() => lean(1, 2n ** 70n)).toThrow(/too big/);
    expect(db.prepare('SELECT count(*) n FROM t').get()).toEqual({ n: 0 });
    expect(() => writeStatements(db).prepare('SELECT 1')).toThrow(/returns no rows/);
    expect(() => writeStatements(db).prepare('INSERT INTO t VALUES (1, 2); INSERT INTO t VALUES (3, 4)')).toThrow(/one statement/);
    expect(() => writeStatements(db).prepare('INSERT INTO nowhere VALUES (1)')).toThrow(/no such table/);
  });

  it('a text past the kept buffer (a big body) is written whole, and the runs after it too', () => {
    db.exec('CREATE TABLE t (s TEXT)');
    const insert = writeStatements(db).prepare('INSERT INTO t VALUES (?)');
    const big = `${'z'.repeat(2_000_000)}é`;
    for (const text of [big, 'small', big, 'small again']) expect(insert(text)).toBe(1);
    expect(db.prepare('SELECT length(s) n, substr(s, -1) last FROM t ORDER BY rowid').all())
      .toEqual([{ n: 2_000_001, last: 'é' }, { n: 5, last: 'l' }, { n: 2_000_001, last: 'é' }, { n: 11, last: 'n' }]);
  });

  it('takes 448 parameters (a 64-row insert of the log)', () => {
    db.exec('CREATE TABLE t (a, b, c, d, e, f, g)');
    const sql = `INSERT INTO t VALUES ${Array.from({ length: 64 }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`;
    // Each row: a = 7 x its index, b = its text, the rest numbers.
    const params = Array.from({ length: 448 }, (_, i) => (i % 7 === 1 ? `s${i}` : i));
    expect(writeStatements(db).prepare(sql)(...params)).toBe(64);
    expect(db.prepare('SELECT count(*) n, sum(a) s, max(b) m FROM t').get()).toEqual({ n: 64, s: 7 * ((63 * 64) / 2), m: 's99' });
    expect(db.prepare('SELECT * FROM t ORDER BY rowid LIMIT 1 OFFSET 63').get()).toEqual({ a: 441, b: 's442', c: 443, d: 444, e: 445, f: 446, g: 447 });
  });

  it('a statement run while another is stepping (a function of the first calling back into JavaScript) leaves the first one\'s text intact', () => {
    db.exec('CREATE TABLE outer_rows (t TEXT, n INTEGER); CREATE TABLE inner_rows (t TEXT)');
    const writes = writeStatements(db);
    const inner = writes.prepare('INSERT INTO inner_rows VALUES (?)');
    db.function('nested', (n: number) => inner(`inner text ${'y'.repeat(5_000)} ${n}`));
    const outer = writes.prepare('INSERT INTO outer_rows VALUES (?, nested(?))');
    const text = `outer text ${'x'.repeat(5_000)}`;
    expect(outer(text, 1)).toBe(1);
    expect(outer(`${text} again`, 2)).toBe(1);
    expect(db.prepare('SELECT t, n FROM outer_rows ORDER BY rowid').all()).toEqual([{ t: text, n: 1 }, { t: `${text} again`, n: 1 }]);
    expect(db.prepare('SELECT t FROM inner_rows ORDER BY rowid').pluck().all()).toEqual([`inner text ${'y'.repeat(5_000)} 1`, `inner text ${'y'.repeat(5_000)} 2`]);
  });

  it('writes inside the connection\'s transaction: a rollback takes its rows', () => {
    db.exec('CREATE TABLE t (n INTEGER)');
    const insert = writeStatements(db).prepare('INSERT INTO t VALUES (?)');
    db.exec('BEGIN');
    insert(1);
    insert(2);
    expect(db.prepare('SELECT count(*) n FROM t').get()).toEqual({ n: 2 });
    db.exec('ROLLBACK');
    db.exec('BEGIN');
    insert(3);
    db.exec('COMMIT');
    expect(db.prepare('SELECT n FROM t').all()).toEqual([{ n: 3 }]);
  });

  it('close() finalizes its statements first, so the connection really closes; they throw afterwards', () => {
    const file = join(dir, 'w.db');
    db.exec('CREATE TABLE t (n INTEGER)');
    const insert = writeStatements(db).prepare('INSERT INTO t VALUES (?)');
    insert(1);
    expect(openDescriptorsOn(file)).toBe(1);
    db.close();
    expect(openDescriptorsOn(file)).toBe(0);
    expect(() => insert(2)).toThrow(/closed/);
    const again = new Database(file);
    expect(again.prepare('SELECT n FROM t').all()).toEqual([{ n: 1 }]);
    again.close();
  });

  it('SLUICE_SQLITE_LEAN_STATEMENTS=off runs them through better-sqlite3, with the same results', () => {
    const script = `
      const Database = require('better-sqlite3');
      const { writeStatements } = require(${JSON.stringify(DIST_WRITES)});
      const db = new Database(':memory:');
      db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, n)');
      const w = writeStatements(db);
      const insert = w.prepare('INSERT OR IGNORE INTO t VALUES (?, ?)');
      const changes = [insert('a', 1), insert('a', 2)];
      let code;
      try { w.prepare('INSERT INTO t VALUES (?, ?)')('a', 9); } catch (e) { code = e.code; }
      console.log(JSON.stringify({ lean: w.lean, reason: w.reason, changes, code }));`;
    const run = (env: NodeJS.ProcessEnv) => JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: join(__dirname, '..', '..', '..'), env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
    expect(run({ ...process.env, SLUICE_SQLITE_LEAN_STATEMENTS: 'off' })).toEqual({ lean: false, reason: 'SLUICE_SQLITE_LEAN_STATEMENTS=off', changes: [1, 0], code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(run({ ...process.env, SLUICE_SQLITE_LEAN_STATEMENTS: '' })).toEqual({ lean: true, changes: [1, 0], code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(run({ ...process.env, SLUICE_SQLITE_LEAN_STATEMENTS: 'on' })).toMatchObject({ lean: true });
    expect(() => run({ ...process.env, SLUICE_SQLITE_LEAN_STATEMENTS: 'false' })).toThrow(/SLUICE_SQLITE_LEAN_STATEMENTS must be "on" or "off", got "false"/);
  });

  it('the event store writes its log through it, and an id collision is still found by its code', async () => {
    db.close();
    const store = new SqliteEventStore({ file: join(dir, 'store.db') });
    try {
      expect(store.leanWrites).toBe(true);
      const id = '0190b3a0-0000-7000-8000-000000000001';
      await store.append('s-1', [{ id, type: 't.v1', data: { a: 1 } }, { type: 't.v1', data: { a: 2 } }]);
      // The same id in another stream: a DuplicateEventIdError, found through the INSERT's unique violation.
      await expect(store.append('s-2', [{ id, type: 't.v1', data: { b: 1 } }])).rejects.toBeInstanceOf(DuplicateEventIdError);
      const events = await store.readStream('s-1');
      expect(events.map((e) => e.data)).toEqual([{ a: 1 }, { a: 2 }]);
    } finally {
      await store.close();
    }
    expect(openDescriptorsOn(join(dir, 'store.db'))).toBe(0);
  });
});
