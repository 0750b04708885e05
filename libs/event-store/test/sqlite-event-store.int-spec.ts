import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteEventStore, StoreUnavailableError, type NewEvent } from '@app/event-store';
import { describeEventStoreContract } from './event-store.contract';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'sluice-event-store-'));
}

function numbered(count: number): NewEvent[] {
  return Array.from({ length: count }, (_, n) => ({ type: 'test.numbered.v1', data: { n } }));
}

/** The contract suite on a fresh file store opened with `options` (removed after). */
function contractOnFile(name: string, options: Omit<ConstructorParameters<typeof SqliteEventStore>[0], 'file'> = {}): void {
  describeEventStoreContract(name, async () => {
    const dir = tempDir();
    const store = new SqliteEventStore({ file: join(dir, 'events.db'), ...options });
    return {
      store,
      cleanup: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
      gapFree: true,
      uniqueEventIds: true,
    };
  });
}

contractOnFile('SqliteEventStore');
contractOnFile('SqliteEventStore (synchronous full: fsync before acknowledging)', { synchronous: 'full' });
contractOnFile('SqliteEventStore (exclusive locking, synchronous full)', { synchronous: 'full', locking: 'exclusive' });
contractOnFile('SqliteEventStore (1 KiB pages, synchronous full)', { synchronous: 'full', pageSize: 1024 });

describe('SqliteEventStore on its file', () => {
  let dir: string;
  let file: string;
  const opened: SqliteEventStore[] = [];
  const open = (options: Partial<ConstructorParameters<typeof SqliteEventStore>[0]> = {}) => {
    const store = new SqliteEventStore({ file, ...options });
    opened.push(store);
    return store;
  };

  beforeEach(() => {
    dir = tempDir();
    file = join(dir, 'events.db');
  });

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('makes a new file with the page size asked for, and an existing file keeps its own', async () => {
    const pageSizeOnDisk = () => {
      const db = new Database(file, { readonly: true });
      try {
        return db.pragma('page_size', { simple: true }) as number;
      } finally {
        db.close();
      }
    };
    const big = (n: number) => ({ type: 'test.big.v1', data: { n, text: `${n}:`.padEnd(5_000, 'x') } });
    const small = open({ pageSize: 1024, synchronous: 'full' });
    expect(small.pageSize).toBe(1024);
    // Events several pages long (SQLite's overflow pages) and short ones, in several commits.
    await small.append('s-1', [big(0), big(1)]);
    await small.append('s-2', numbered(300));
    await small.append('s-1', [big(2)]);
    await small.close();
    opened.splice(0);
    expect(pageSizeOnDisk()).toBe(1024);
    // Reopened with another size asked for: the file's own stays, and so does everything in it.
    const again = open({ pageSize: 8192, synchronous: 'full' });
    expect(again.pageSize).toBe(1024);
    const s1 = await again.readStream('s-1');
    expect(s1.map((e) => (e.data as { text: string }).text)).toEqual([0, 1, 2].map((n) => `${n}:`.padEnd(5_000, 'x')));
    expect((await again.readStream('s-2')).map((e) => (e.data as { n: number }).n)).toEqual(Array.from({ length: 300 }, (_, n) => n));
    await again.append('s-1', [big(3)], { expectedRevision: 2n });
    expect((await again.readStream('s-1')).length).toBe(4);
    await again.close();
    opened.splice(0);
    expect(pageSizeOnDisk()).toBe(1024);
    // Without the option a new file gets SQLite's 4,096.
    rmSync(dir, { recursive: true, force: true });
    dir = tempDir();
    file = join(dir, 'events.db');
    expect(open().pageSize).toBe(4096);
  });

  it('refuses a page size SQLite would ignore, naming it', () => {
    for (const bad of [1000, 256, 131_072, 4096.5]) {
      expect(() => open({ pageSize: bad })).toThrow(`pageSize must be a power of two from 512 to 65536, got ${bad}`);
    }
  });

  it('keeps events, revisions and positions across closing and reopening the file', async () => {
    const first = open();
    await first.append('source-1', [{ type: 'a.v1', data: { text: 'ünïcødé ✓' }, metadata: { actor: 'u_1' } }]);
    await first.append('source-2', numbered(2));
    const before = await first.readAll();
    await first.close();

    const reopened = open();
    expect(await reopened.readAll()).toEqual(before);
    expect(await reopened.streamRevision('source-2')).toBe(1n);
    await expect(reopened.append('source-1', numbered(1), { expectedRevision: 0n })).resolves.toEqual({
      nextExpectedRevision: 1n,
      position: 4n,
    });
  });

  it('uses WAL mode with the requested synchronous level', async () => {
    const normal = open();
    expect(normal.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(normal.db.pragma('synchronous', { simple: true })).toBe(1);
    await normal.append('s', numbered(1));
    expect(existsSync(`${file}-wal`)).toBe(true);
    await normal.close();

    expect(normal.fsyncsLog).toBe(false);

    // 'full' commits with NORMAL and acknowledges only after its own fsync of the WAL.
    const full = open({ synchronous: 'full' });
    expect(full.db.pragma('synchronous', { simple: true })).toBe(1);
    expect(full.fsyncsLog).toBe(true);
  });

  it('durable mode: every append resolves after an fsync, and concurrent groups share fsyncs', async () => {
    const store = open({ synchronous: 'full' });
    const results = await Promise.all([...Array(50).keys()].map((i) => store.append(`d-${i % 5}`, numbered(1))));
    expect(results).toHaveLength(50);
    expect(store.fsyncCount).toBeGreaterThan(0);
    expect(store.fsyncCount).toBeLessThanOrEqual(50);
    const seen: bigint[] = [];
    const sub = store.subscribeToAll((events) => {
      for (const e of events) seen.push(e.position);
    });
    await sub.caughtUp();
    expect(seen).toHaveLength(50);
    await sub.stop();
    await store.close();
  });

  it('commits the appends of one tick in one transaction and notifies once with the new head', async () => {
    const store = open();
    const heads: bigint[] = [];
    store.onAppended((head) => heads.push(head));

    await Promise.all(Array.from({ length: 20 }, (_, i) => store.append(`s-${i}`, numbered(1))));
    expect(heads).toEqual([20n]);

    const unsubscribe = store.onAppended(() => heads.push(-1n));
    unsubscribe();
    await store.append('s-0', numbered(2));
    expect(heads).toEqual([20n, 22n]);
  });

  it('does not notify for a group in which every append failed', async () => {
    const store = open();
    await store.append('s', numbered(1));
    const heads: bigint[] = [];
    store.onAppended((head) => heads.push(head));
    await expect(store.append('s', numbered(1), { expectedRevision: 'no_stream' })).rejects.toThrow();
    expect(heads).toEqual([]);
  });

  it('lets read models commit their own tables on the same connection between group commits', async () => {
    const store = open();
    store.db.exec('CREATE TABLE IF NOT EXISTS read_model (id TEXT PRIMARY KEY, n INTEGER); CREATE TABLE checkpoint (position INTEGER)');
    store.db.prepare('INSERT INTO checkpoint VALUES (0)').run();
    const save = store.db.transaction((id: string, n: number, position: bigint) => {
      store.db.prepare('INSERT INTO read_model VALUES (?, ?)').run(id, n);
      store.db.prepare('UPDATE checkpoint SET position = ?').run(position);
    });
    const subscription = store.subscribeToAll((batch) => {
      for (const e of batch) save(e.id, (e.data as { n: number }).n, e.position);
    });
    await Promise.all([store.append('a', numbered(3)), store.append('b', numbered(3))]);
    await subscription.caughtUp();
    await subscription.stop();

    expect(store.db.prepare('SELECT count(*) FROM read_model').pluck().get()).toBe(6);
    expect(store.db.prepare('SELECT position FROM checkpoint').pluck().get()).toBe(6);
  });

  it('waits for a transaction left open on its connection instead of nesting in it', async () => {
    const store = open();
    store.db.exec('CREATE TABLE other (x INTEGER)');
    store.db.exec('BEGIN');
    store.db.exec('INSERT INTO other VALUES (1)');
    let done = false;
    const appended = store.append('s', numbered(1)).then((result) => {
      done = true;
      return result;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(done).toBe(false);
    store.db.exec('ROLLBACK');

    await expect(appended).resolves.toEqual({ nextExpectedRevision: 0n, position: 1n });
    expect(store.db.prepare('SELECT count(*) FROM other').pluck().get()).toBe(0);
  });

  it('fails the appends with StoreUnavailableError when another process holds the write lock', async () => {
    const store = open({ busyTimeoutMs: 50 });
    await store.append('s', numbered(1));
    const other = new Database(file);
    try {
      other.exec('BEGIN IMMEDIATE');
      const settled = await Promise.allSettled([store.append('s', numbered(1)), store.append('t', numbered(1))]);
      for (const outcome of settled) {
        expect(outcome.status).toBe('rejected');
        expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
      }
      other.exec('ROLLBACK');
    } finally {
      other.close();
    }
    await expect(store.append('s', numbered(1), { expectedRevision: 0n })).resolves.toEqual({
      nextExpectedRevision: 1n,
      position: 2n,
    });
  });

  it('with exclusive locking, keeps the file to itself until closed, with no -shm file, and its log reopens intact', async () => {
    const store = open({ locking: 'exclusive', synchronous: 'full' });
    await store.append('s', numbered(3));
    // Its own reads and a catch-up subscription work on the one connection.
    expect((await store.readAll()).map((e) => (e.data as { n: number }).n)).toEqual([0, 1, 2]);
    expect(existsSync(`${file}-shm`)).toBe(false);
    const other = new Database(file, { timeout: 0 });
    try {
      expect(() => other.prepare('SELECT count(*) FROM events').get()).toThrow(/locked|busy/i);
    } finally {
      other.close();
    }
    await store.close();

    const reader = new Database(file, { readonly: true });
    try {
      expect(reader.prepare('SELECT count(*) FROM events').pluck().get()).toBe(3);
    } finally {
      reader.close();
    }
    const reopened = open({ locking: 'exclusive' });
    await expect(reopened.append('s', numbered(1), { expectedRevision: 2n })).resolves.toEqual({ nextExpectedRevision: 3n, position: 4n });
  });

  it('with exclusive locking, checks revisions right across a repeated old append, a failed one and a reopen', async () => {
    const store = open({ locking: 'exclusive' });
    const first = { id: '0190a000-0000-7000-8000-000000000001', type: 'test.numbered.v1', data: { n: 0 } };
    await store.append('s', [first]);
    await store.append('s', numbered(2), { expectedRevision: 0n });
    // The first append again, as a retry: its original result, and the stream's revision stays 2.
    await expect(store.append('s', [first], { expectedRevision: 'no_stream' })).resolves.toEqual({ nextExpectedRevision: 0n, position: 1n });
    // Two events whose second collides: nothing of it stays, and the revision stays 2.
    const collides = [{ type: 'test.numbered.v1', data: { n: 9 } }, first];
    await expect(store.append('s', collides, { expectedRevision: 2n })).rejects.toThrow();
    await expect(store.append('s', numbered(1), { expectedRevision: 1n })).rejects.toThrow(/revision/i);
    await expect(store.append('s', numbered(1), { expectedRevision: 2n })).resolves.toEqual({ nextExpectedRevision: 3n, position: 4n });
    await store.close();
    const reopened = open({ locking: 'exclusive' });
    await expect(reopened.append('s', numbered(1), { expectedRevision: 3n })).resolves.toEqual({ nextExpectedRevision: 4n, position: 5n });
  });

  it('writes an append of many events whole or not at all, whatever its length (one INSERT per 64 events, a savepoint past that)', async () => {
    const store = open({ locking: 'exclusive' });
    const taken = '0190a000-0000-7000-8000-0000000000aa';
    await store.append('t', [{ id: taken, type: 'test.numbered.v1', data: { n: -1 } }]);
    for (const length of [2, 64, 65, 150]) {
      // The append collides on its last event (a stored id), then on an id it repeats itself: nothing of it stays.
      const events = numbered(length);
      await expect(store.append(`s${length}`, [...events.slice(0, -1), { ...events[length - 1], id: taken }]))
        .rejects.toMatchObject({ code: 'duplicate_event_id', eventId: taken });
      const repeated = '0190a000-0000-7000-8000-0000000000bb';
      await expect(store.append(`s${length}`, [...events.slice(0, -2), { ...events[0], id: repeated }, { ...events[1], id: repeated }]))
        .rejects.toMatchObject({ code: 'duplicate_event_id', eventId: repeated });
      expect(await store.readStream(`s${length}`)).toEqual([]);
      const head = await store.headPosition();
      await expect(store.append(`s${length}`, events)).resolves.toEqual({ nextExpectedRevision: BigInt(length - 1), position: head + BigInt(length) });
      const stored = await store.readStream(`s${length}`);
      expect(stored.map((e) => [e.revision, e.position, (e.data as { n: number }).n]))
        .toEqual(events.map((e, i) => [BigInt(i), head + BigInt(i + 1), (e.data as { n: number }).n]));
    }
    await store.close();
  });

  it('commits the appends still queued when it is closed', async () => {
    const store = open();
    const pending = store.append('s', numbered(2));
    await store.close();
    await expect(pending).resolves.toEqual({ nextExpectedRevision: 1n, position: 2n });

    const reopened = open();
    expect(await reopened.headPosition()).toBe(2n);
  });
});
