import fs, { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { SqliteEventStore, WalCheckpointer, type InlineFold, type NewEvent, type StoredEvent } from '@app/event-store';
import { QuietLoop, ScriptedLoad } from './scripted-load';

/** An event's fields as a plain object (what its getters give). */
function plain(e: StoredEvent): StoredEvent {
  return { id: e.id, type: e.type, streamName: e.streamName, revision: e.revision, position: e.position, data: e.data, metadata: e.metadata };
}

/**
 * The commit path of issue 10 on a real SQLite file: appends acknowledged at their commit
 * (`durability: 'commit'`), appends that wait to share a commit (`lingerMs`), and the fold that
 * runs inside the writer's transaction (`InlineFold`).
 */
describe('SqliteEventStore commit path', () => {
  let dir: string;
  let store: SqliteEventStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-commit-path-'));
    // `walSync: 'fdatasync'`: these cases hold, slow down or fail the sync through `fs`'s
    // fdatasync (the light sync of wal-sync.int-spec.ts is the library's own call).
    store = new SqliteEventStore({ file: join(dir, 'events.db'), synchronous: 'full', locking: 'exclusive', walSync: 'fdatasync' });
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const one = (n: number): NewEvent[] => [{ type: 'test.numbered.v1', data: { n } }];
  const turns = (k: number) => new Promise<void>((r) => {
    let left = k;
    const next = () => (--left <= 0 ? r() : setImmediate(next));
    setImmediate(next);
  });
  async function until(what: string, check: () => boolean): Promise<void> {
    for (let i = 0; i < 500; i++) {
      if (check()) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  describe('durability', () => {
    it("'log' (the default) resolves only after an fsync of the WAL that started after its commit", async () => {
      const before = store.fsyncCount;
      await store.append('s', one(1));
      expect(store.fsyncCount).toBe(before + 1);
    });

    it("'commit' resolves at its commit, and the store fsyncs it soon after on its own", async () => {
      const before = store.fsyncCount;
      await store.append('s', one(1), { durability: 'commit' });
      // Committed and readable, with no fsync yet.
      expect(store.fsyncCount).toBe(before);
      expect((await store.readAll()).map((e) => (e.data as { n: number }).n)).toEqual([1]);
      // No durable append follows: the store's own fsync covers it (COMMIT_ONLY_SYNC_MS).
      await until('the fsync covering a commit-only append', () => store.fsyncCount === before + 1);
    });

    it('in one group, commit-only appends are answered before the durable ones, which share one fsync', async () => {
      const order: string[] = [];
      const before = store.fsyncCount;
      await Promise.all([
        store.append('a', one(1)).then(() => order.push('log-1')),
        store.append('b', one(2), { durability: 'commit' }).then(() => order.push('commit-2')),
        store.append('c', one(3)).then(() => order.push('log-3')),
      ]);
      expect(order).toEqual(['commit-2', 'log-1', 'log-3']);
      expect(store.fsyncCount).toBe(before + 1);
    });

    it('a commit-only append issued during an fsync commits before it ends, unless it waits for it (afterSyncInProgress)', async () => {
      // The WAL's fsync is held until released, so "during an fsync" does not depend on the disk's speed.
      const held: (() => void)[] = [];
      const realFsync = fs.fdatasync;
      const spy = jest.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
        realFsync(fd, (err) => held.push(() => cb(err)));
      }) as typeof fs.fdatasync);
      try {
        /** Appends 'log', then during its fsync a commit-only append with `options`: what was answered before and after the fsync ended. */
        const race = async (stream: string, options: { afterSyncInProgress?: boolean }) => {
          const order: string[] = [];
          const log = store.append(stream, one(1)).then(() => order.push('log'));
          await until('the fsync in progress', () => held.length > 0);
          const commit = store.append(`${stream}-run`, one(2), { durability: 'commit', ...options }).then(() => order.push('commit'));
          await turns(5);
          await new Promise((r) => setTimeout(r, 20));
          const duringFsync = [...order];
          held.splice(0).forEach((release) => release());
          await Promise.all([log, commit]);
          return { duringFsync, order };
        };
        expect(await race('plain', {})).toEqual({ duringFsync: ['commit'], order: ['commit', 'log'] });
        expect(await race('waits', { afterSyncInProgress: true })).toEqual({ duringFsync: [], order: ['log', 'commit'] });
        // Nothing else came along: it was written on its own once the fsync ended.
        expect((await store.readAll()).map((e) => e.streamName)).toEqual(['plain', 'plain-run', 'waits', 'waits-run']);
      } finally {
        spy.mockRestore();
        held.splice(0).forEach((release) => release());
      }
    });

    it('refuses an unknown durability or linger with a clear error, writing nothing', async () => {
      await expect(store.append('s', one(1), { durability: 'eventually' as never })).rejects.toThrow(/durability must be 'log' or 'commit'/);
      await expect(store.append('s', one(1), { lingerMs: -1 })).rejects.toThrow(/lingerMs must be a number from 0 to 1000/);
      await expect(store.append('s', one(1), { lingerMs: Number.NaN })).rejects.toThrow(/lingerMs/);
      await expect(store.append('s', one(1), { lingerMs: 2, lingerOnlyWhenBusy: 'yes' as never })).rejects.toThrow(/lingerOnlyWhenBusy must be a boolean, got yes/);
      expect(await store.readAll()).toEqual([]);
    });
  });

  describe('fsync placement', () => {
    /** A store of its own with `placement`; closed and removed after `body`. */
    async function withStore(placement: 'loop' | 'pool', body: (s: SqliteEventStore) => Promise<void>): Promise<void> {
      const own = new SqliteEventStore({ file: join(dir, `${placement}.db`), synchronous: 'full', locking: 'exclusive', fsyncPlacement: placement, walSync: 'fdatasync' });
      try {
        await body(own);
      } finally {
        await own.close();
      }
    }

    it("'loop' fsyncs on the event loop from a turn after the commit's, so what that turn still sends goes first, and answers the append after it", async () => {
      const pool = jest.spyOn(fs, 'fdatasync');
      const order: string[] = [];
      const realSync = fs.fdatasyncSync;
      const onLoop = jest.spyOn(fs, 'fdatasyncSync').mockImplementation((fd) => {
        order.push('fsync');
        realSync(fd);
      });
      try {
        await withStore('loop', async (s) => {
          const appended = s.append('s', one(1)).then(() => order.push('resolved'));
          // Queued after the flush's own immediate, in the commit's turn (as the sandbox
          // supervisor's write of a run's invocation is): it runs before the fsync.
          setImmediate(() => order.push('queued after the flush'));
          await appended;
          expect(order).toEqual(['queued after the flush', 'fsync', 'resolved']);
          expect(s.fsyncsOnLoop).toBe(1);
          expect(s.fsyncCount).toBe(1);
        });
        expect(pool).not.toHaveBeenCalled();
      } finally {
        pool.mockRestore();
        onLoop.mockRestore();
      }
    });

    it("'pool' fsyncs on the libuv pool, never on the loop", async () => {
      const onLoop = jest.spyOn(fs, 'fdatasyncSync');
      const pool = jest.spyOn(fs, 'fdatasync');
      try {
        await withStore('pool', async (s) => {
          await s.append('s', one(1));
          expect(s.fsyncsOnLoop).toBe(0);
          expect(s.fsyncCount).toBe(1);
        });
        expect(pool).toHaveBeenCalledTimes(1);
        expect(onLoop).not.toHaveBeenCalled();
      } finally {
        pool.mockRestore();
        onLoop.mockRestore();
      }
    });

    it("'auto' sends the fsync to the pool once a second fsync on the loop was slow (a slow disk stalls the loop twice), not after one", async () => {
      // 'auto' with the loop's utilisation left out (always idle enough), so only the disk's speed decides.
      const placement = new QuietLoop();
      const own = new SqliteEventStore({ file: join(dir, 'auto.db'), synchronous: 'full', locking: 'exclusive', fsyncPlacement: placement, walSync: 'fdatasync' });
      const realSync = fs.fdatasyncSync;
      // The disk takes 30 ms for the fsyncs of the first and third appends, and is quick between.
      // The quick one does not reach the disk at all: right after `npm install` (CI) the disk may
      // still be writing back hundreds of MB, and a real fsync then took over 10 ms, which the
      // rule rightly counted as a second slow one.
      let calls = 0;
      const slow = jest.spyOn(fs, 'fdatasyncSync').mockImplementation((fd) => {
        calls++;
        if (calls === 2) return;
        realSync(fd);
        const until = Date.now() + 30;
        while (Date.now() < until) { /* waiting for the disk */ }
      });
      const pool = jest.spyOn(fs, 'fdatasync');
      try {
        await own.append('s', one(1));
        await own.append('s', one(2));
        // One slow fsync (an outlier): still on the loop.
        expect(own.fsyncsOnLoop).toBe(2);
        await own.append('s', one(3));
        expect(own.fsyncsOnLoop).toBe(3);
        // The second slow one among the last few: the next ones go to the pool.
        await own.append('s', one(4));
        await own.append('s', one(5));
        expect(own.fsyncsOnLoop).toBe(3);
        expect(own.fsyncCount).toBe(5);
        expect(pool).toHaveBeenCalledTimes(2);
      } finally {
        slow.mockRestore();
        pool.mockRestore();
        await own.close();
      }
    });

    it('syncs the WAL with fdatasync (its frames and size), on the loop and on the pool, never with fsync', async () => {
      const calls = { fsync: jest.spyOn(fs, 'fsync'), fsyncSync: jest.spyOn(fs, 'fsyncSync') };
      const datasync = { pool: jest.spyOn(fs, 'fdatasync'), loop: jest.spyOn(fs, 'fdatasyncSync') };
      try {
        for (const placement of ['loop', 'pool'] as const) {
          await withStore(placement, async (s) => {
            await s.append('s', one(1));
            await s.append('s', one(2));
            expect(s.fsyncCount).toBe(2);
          });
        }
        expect(datasync.loop).toHaveBeenCalledTimes(2);
        expect(datasync.pool).toHaveBeenCalledTimes(2);
        expect(calls.fsync).not.toHaveBeenCalled();
        expect(calls.fsyncSync).not.toHaveBeenCalled();
      } finally {
        for (const spy of [...Object.values(calls), ...Object.values(datasync)]) spy.mockRestore();
      }
    });

    it('an fsync that fails on the loop fails the appends it covers, as on the pool; the store goes on', async () => {
      await withStore('loop', async (s) => {
        const eio = Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
        const onLoop = jest.spyOn(fs, 'fdatasyncSync').mockImplementationOnce(() => {
          throw eio;
        });
        try {
          await expect(s.append('s', one(1))).rejects.toThrow(/fsync of the log failed: EIO/);
          // The next fsync works again and covers the next append.
          await s.append('s', one(2));
        } finally {
          onLoop.mockRestore();
        }
      });
    });
  });

  describe('lingering appends', () => {
    it('wait for the next append that does not linger and share its commit and fsync', async () => {
      const heads: bigint[] = [];
      store.onAppended((h) => heads.push(h));
      const before = store.fsyncCount;
      let lingeringDone = false;
      const lingering = store.append('inbox', one(1), { lingerMs: 1000 }).then((r) => {
        lingeringDone = true;
        return r;
      });
      await turns(5);
      // Not written yet: nothing else came along and its time is not up.
      expect(lingeringDone).toBe(false);
      expect(await store.readAll()).toEqual([]);
      const [first, second] = await Promise.all([lingering, store.append('run', one(2), { durability: 'commit' })]);
      // Written in one transaction (one notification), in the order they were issued, with one fsync.
      expect([first.position, second.position]).toEqual([1n, 2n]);
      expect(heads).toEqual([2n]);
      expect(store.fsyncCount).toBe(before + 1);
    });

    it('are written on their own when their time is up', async () => {
      const r = await store.append('inbox', one(1), { lingerMs: 5 });
      expect(r.position).toBe(1n);
      expect((await store.readAll()).map((e) => e.position)).toEqual([1n]);
    });

    describe('lingerOnlyWithTimeToSpare', () => {
      let load: ScriptedLoad;
      let own: SqliteEventStore;
      /** An append and whether it was answered within a few turns of the loop. */
      async function answeredSoon(append: Promise<unknown>): Promise<boolean> {
        let done = false;
        void append.then(() => {
          done = true;
        });
        await turns(5);
        return done;
      }

      beforeEach(() => {
        load = new ScriptedLoad();
        own = new SqliteEventStore({
          file: join(dir, 'saturation.db'), synchronous: 'full', locking: 'exclusive', fsyncPlacement: load, lingerOnlyWithTimeToSpare: true,
        });
      });

      afterEach(async () => {
        await own.close();
      });

      it('a durable append lingers while the loop has time to spare, and is written at once once it is saturated', async () => {
        const quiet = own.append('inbox', one(1), { lingerMs: 1000 });
        expect(await answeredSoon(quiet)).toBe(false);
        expect(await own.readAll()).toEqual([]);

        // Saturated: the next durable append does not wait for its linger, and takes the quiet one along.
        load.quiet = false;
        const heads: bigint[] = [];
        own.onAppended((h) => heads.push(h));
        const started = Date.now();
        const [first, second] = await Promise.all([quiet, own.append('inbox', one(2), { lingerMs: 1000 })]);
        // Not held for its linger.
        expect(Date.now() - started).toBeLessThan(1000);
        expect([first.position, second.position]).toEqual([1n, 2n]);
        expect(heads).toEqual([2n]);
      });

      it('an append nobody waits an fsync for (a delivery outcome) still lingers on a saturated loop', async () => {
        load.quiet = false;
        const outcome = own.append('outcomes', one(1), { durability: 'commit', lingerMs: 1000 });
        expect(await answeredSoon(outcome)).toBe(false);
        expect(await own.readAll()).toEqual([]);
        // The next durable append takes it along, at once.
        const [o, r] = await Promise.all([outcome, own.append('inbox', one(2), { lingerMs: 1000 })]);
        expect([o.position, r.position]).toEqual([1n, 2n]);
      });

      it('without the option a saturated loop changes nothing: the append lingers', async () => {
        const other = new ScriptedLoad();
        other.quiet = false;
        const plainStore = new SqliteEventStore({ file: join(dir, 'plain.db'), synchronous: 'full', locking: 'exclusive', fsyncPlacement: other });
        try {
          const lingering = plainStore.append('inbox', one(1), { lingerMs: 1000 });
          expect(await answeredSoon(lingering)).toBe(false);
          await Promise.all([lingering, plainStore.append('inbox', one(2))]);
        } finally {
          await plainStore.close();
        }
      });
    });

    describe('lingerOnlyWhenBusy', () => {
      const record = (n: number) => store.append('run', one(n), { durability: 'commit', lingerMs: 1000, lingerOnlyWhenBusy: true });

      it('is written at once while no pace of arrivals is known, with the lingering request it follows', async () => {
        const heads: bigint[] = [];
        store.onAppended((h) => heads.push(h));
        const request = store.append('inbox', one(1), { lingerMs: 1000 });
        const started = Date.now();
        const [r1, r2] = await Promise.all([request, record(2)]);
        // Not held for its linger (1 s): written in the next turn, in one commit with the request.
        expect(Date.now() - started).toBeLessThan(500);
        expect([r1.position, r2.position]).toEqual([1n, 2n]);
        expect(heads).toEqual([2n]);
      });

      it('is written at once while arrivals are slower than the linger', async () => {
        // Two arrivals 60 ms apart: not one more expected within the record's 20 ms linger.
        await store.append('inbox', one(1), { lingerMs: 20 });
        await new Promise((r) => setTimeout(r, 60));
        const second = store.append('inbox', one(2), { lingerMs: 20 });
        let recorded = false;
        const rec = store.append('run', one(3), { durability: 'commit', lingerMs: 20, lingerOnlyWhenBusy: true }).then((r) => {
          recorded = true;
          return r;
        });
        // Written within a few turns, long before the 20 ms linger, together with the request.
        await turns(5);
        expect(recorded).toBe(true);
        expect((await rec).position).toBe(3n);
        expect((await second).position).toBe(2n);
      });

      it('lingers while arrivals come fast, so the next requests and records share its commit', async () => {
        const heads: bigint[] = [];
        store.onAppended((h) => heads.push(h));
        const before = store.fsyncCount;
        // A burst of requests, as at busy rates: the pace says more are coming within the linger.
        const requests = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => store.append('inbox', one(n), { lingerMs: 1000 }));
        let recordsDone = 0;
        const records = [11, 12, 13].map((n) => record(n).then((r) => {
          recordsDone++;
          return r;
        }));
        await turns(5);
        // Held: nothing written yet (neither the requests nor the records).
        expect(recordsDone).toBe(0);
        expect(await store.readAll()).toEqual([]);
        // The next append that does not linger writes them all, in one commit and one fsync.
        const last = store.append('other', one(20));
        const all = await Promise.all([...requests, ...records, last]);
        expect(all.map((r) => r.position)).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 10n, 11n, 12n]);
        expect(heads).toEqual([12n]);
        expect(store.fsyncCount).toBe(before + 1);
      });
    });

    it('are written by close()', async () => {
      const pending = store.append('inbox', one(1), { lingerMs: 1000 });
      await store.close();
      await expect(pending).resolves.toEqual({ nextExpectedRevision: 0n, position: 1n });
    });
  });

  describe('inline fold', () => {
    /** A fold that writes one row per event into its own table, with a checkpoint it keeps. */
    function tableFold(opts: { failOn?: number } = {}) {
      store.db.exec('CREATE TABLE IF NOT EXISTS rm_folded (n INTEGER PRIMARY KEY)');
      const insert = store.db.prepare('INSERT INTO rm_folded (n) VALUES (?)');
      const calls: { events: StoredEvent[]; inTransaction: boolean }[] = [];
      const settled: { positions: bigint[]; committed: boolean }[] = [];
      let position = 0n;
      const fold: InlineFold = {
        position: () => position,
        apply(events) {
          calls.push({ events, inTransaction: store.db.inTransaction });
          for (const e of events) insert.run((e.data as { n: number }).n);
          if (events.some((e) => (e.data as { n: number }).n === opts.failOn)) throw new Error('fold failed');
        },
        settled(events, committed) {
          settled.push({ positions: events.map((e) => e.position), committed });
          if (committed) position = events[events.length - 1].position;
        },
      };
      store.setInlineFold(fold);
      const rows = () => (store.db.prepare('SELECT n FROM rm_folded ORDER BY n').all() as { n: number }[]).map((r) => r.n);
      return { calls, settled, rows, setPosition: (p: bigint) => (position = p) };
    }

    it('writes each page a fold changes once, to the WAL: no savepoint copy of it, no temporary file', async () => {
      // Rows already on disk, spread over many pages, which the fold then changes. Under a
      // savepoint (the fold had one) each changed page is also kept for ROLLBACK TO, which SQLite
      // spills to a temporary file past 64 KiB unless temporary data is kept in memory; each page
      // then costs another 4 KiB write. Counted by the kernel: /proc/self/io's wchar (bytes this
      // process passed to write calls). Not the number of calls: anything else of this process
      // that writes meanwhile (a log line of an earlier suite's timer under --runInBand) adds a
      // call, where it adds only a few hundred bytes.
      store.db.exec('CREATE TABLE rm_wide (id INTEGER PRIMARY KEY, v TEXT)');
      const fill = store.db.prepare('INSERT INTO rm_wide (id, v) VALUES (?, ?)');
      store.db.transaction(() => {
        for (let i = 0; i < 400; i++) fill.run(i, 'x'.repeat(1000));
      })();
      const touch = store.db.prepare('UPDATE rm_wide SET v = ? WHERE id % 4 = 0');
      store.setInlineFold({ position: () => 0n, apply: () => void touch.run('y'.repeat(1000)), settled: () => undefined });
      const FRAME = 4096 + 24;
      const walFrames = () => Math.max(0, (statSync(join(dir, 'events.db-wal')).size - 32) / FRAME);
      const bytesWritten = () => Number(/wchar:\s+(\d+)/.exec(fs.readFileSync('/proc/self/io', 'utf8'))![1]);
      const frames0 = walFrames();
      const bytes0 = bytesWritten();
      await store.append('a', one(1));
      const frames = walFrames() - frames0;
      const bytes = bytesWritten() - bytes0;
      // About 100 pages changed, each one WAL frame; a spilled sub-journal would add about as much
      // again (over 300 KiB), far beyond the 32 KiB left for anything else.
      expect(frames).toBeGreaterThan(90);
      expect(bytes).toBeGreaterThanOrEqual(frames * FRAME);
      expect(bytes).toBeLessThanOrEqual(frames * FRAME + 32 * 1024);
    });

    it('folds each group inside its transaction with exactly the events the log holds, then reports the commit', async () => {
      const fold = tableFold();
      await Promise.all([store.append('a', one(1)), store.append('b', [...one(2), ...one(3)], { durability: 'commit' })]);
      await store.append('a', one(4), { expectedRevision: 0n });
      expect(fold.calls.map((c) => c.inTransaction)).toEqual([true, true]);
      const logged = await store.readAll();
      // As plain events (they are parsed lazily: LazyStoredEvent), equal to what the log gives back.
      expect(fold.calls.flatMap((c) => c.events).map(plain)).toEqual(logged.map(plain));
      expect(fold.settled).toEqual([{ positions: [1n, 2n, 3n], committed: true }, { positions: [4n], committed: true }]);
      expect(fold.rows()).toEqual([1, 2, 3, 4]);
    });

    it('gives the fold what the log gives back: the appended objects when their JSON is the same, the parsed text when it is not', async () => {
      const seen: StoredEvent[] = [];
      store.setInlineFold({ position: () => BigInt(seen.length), apply: (events) => void seen.push(...events), settled: () => undefined });
      const clean = { n: 1, nested: { list: [1, 'two', null] } };
      const cleanMeta = { correlationId: 'c-1' };
      const odd = { n: 2, gone: undefined, zero: -0, at: new Date(0), list: [1, undefined] };
      await store.append('a', [
        { type: 'test.clean.v1', data: clean, metadata: cleanMeta },
        { type: 'test.odd.v1', data: odd, metadata: { actor: undefined, hops: Number.NaN } as never },
      ]);
      const logged = await store.readAll();
      expect(seen).toHaveLength(2);
      for (let i = 0; i < 2; i++) {
        expect(seen[i].data).toStrictEqual(logged[i].data);
        expect(seen[i].metadata).toStrictEqual(logged[i].metadata);
      }
      expect(logged[1].data).toStrictEqual({ n: 2, zero: 0, at: '1970-01-01T00:00:00.000Z', list: [1, null] });
      // The clean one was not parsed again: the fold read the appender's own object.
      expect(seen[0].data).toBe(clean);
      expect(seen[1].data).not.toBe(odd);
    });

    it('leaves out appends that failed or were retries, and does not run for a group that wrote nothing', async () => {
      const fold = tableFold();
      await store.append('a', [{ id: '0192f5a0-0000-7000-8000-000000000001', type: 'test.numbered.v1', data: { n: 1 } }]);
      const results = await Promise.allSettled([
        store.append('a', one(2), { expectedRevision: 'no_stream' }), // wrong revision
        store.append('a', [{ id: '0192f5a0-0000-7000-8000-000000000001', type: 'test.numbered.v1', data: { n: 1 } }]), // a retry
        store.append('b', one(3)),
      ]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
      expect(fold.calls.map((c) => c.events.map((e) => (e.data as { n: number }).n))).toEqual([[1], [3]]);
      await Promise.allSettled([store.append('a', one(9), { expectedRevision: 'no_stream' })]);
      expect(fold.calls).toHaveLength(2);
      expect(fold.rows()).toEqual([1, 3]);
    });

    it('is not run while it is behind the log (its subscription catches up instead)', async () => {
      const fold = tableFold();
      fold.setPosition(-1n);
      await store.append('a', one(1));
      expect(fold.calls).toEqual([]);
      fold.setPosition(1n);
      await store.append('a', one(2));
      expect(fold.calls.map((c) => c.events.map((e) => e.position))).toEqual([[2n]]);
    });

    it("a fold that throws is undone with its transaction; the group is written again without it: the events commit, the fold's writes do not", async () => {
      const fold = tableFold({ failOn: 2 });
      await store.append('a', one(1));
      await expect(store.append('a', one(2))).resolves.toMatchObject({ position: 2n });
      expect((await store.readAll()).map((e) => e.position)).toEqual([1n, 2n]);
      expect(fold.rows()).toEqual([1]);
      expect(fold.settled.map((s) => s.committed)).toEqual([true, false]);
      // It stays behind (position 1), so later groups are left to its subscription.
      await store.append('a', one(3));
      expect(fold.calls).toHaveLength(2);
    });

    it('a group written again after its fold threw gives every append the answer it would have had without a fold', async () => {
      // The same group of appends (a wrong revision, a retry of a stored append, a collision with
      // a stored id, a long append, a commit-only one) against two stores: one without a fold,
      // one whose fold writes its rows and then throws. Same answers, same log, no fold rows.
      const stored = { id: '0192f5a0-0000-7000-8000-0000000000aa', type: 'test.numbered.v1', data: { n: 1 } };
      const group = (s: SqliteEventStore) => Promise.allSettled([
        s.append('a', one(2), { expectedRevision: 'no_stream' }),
        s.append('a', [stored]),
        s.append('c', [{ ...stored, data: { n: 3 } }]),
        s.append('b', Array.from({ length: 70 }, (_, i) => one(100 + i)[0])),
        s.append('d', one(4), { durability: 'commit' }),
        s.append('a', one(5), { expectedRevision: 0n }),
      ]);
      const answers = (results: PromiseSettledResult<unknown>[]) =>
        results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).constructor.name));
      // Ids made by the store (and the times in metadata) differ between the two stores.
      const logOf = async (s: SqliteEventStore) =>
        (await s.readAll()).map((e) => ({ stream: e.streamName, revision: e.revision, position: e.position, type: e.type, data: e.data }));
      const plainStore = new SqliteEventStore({ file: join(dir, 'plain.db'), synchronous: 'full', locking: 'exclusive' });
      try {
        await plainStore.append('a', [stored]);
        const expected = answers(await group(plainStore));
        const expectedLog = await logOf(plainStore);

        const fold = tableFold({ failOn: 5 });
        await store.append('a', [stored]);
        const got = answers(await group(store));
        expect(got).toEqual(expected);
        expect(got).toEqual([
          'WrongExpectedRevisionError',
          { nextExpectedRevision: 0n, position: 1n },
          'DuplicateEventIdError',
          { nextExpectedRevision: 69n, position: 71n },
          { nextExpectedRevision: 0n, position: 72n },
          { nextExpectedRevision: 1n, position: 73n },
        ]);
        expect(await logOf(store)).toEqual(expectedLog);
        expect(expectedLog).toHaveLength(73);
        // The fold ran once for the group, threw, and none of its rows stayed.
        expect(fold.calls).toHaveLength(2);
        expect(fold.settled.map((s) => s.committed)).toEqual([true, false]);
        expect(fold.rows()).toEqual([1]);
        // The store goes on: the next group commits (left to the fold's subscription, which is behind).
        await expect(store.append('e', one(6))).resolves.toMatchObject({ position: 74n });
      } finally {
        await plainStore.close();
      }
    });
  });

  describe('background checkpoints', () => {
    it('copy the WAL into the file on a worker thread after commits, and close() ends the thread', async () => {
      const file = join(dir, 'background.db');
      const bg = new SqliteEventStore({ file, synchronous: 'full', locking: 'normal', backgroundCheckpointMs: 0 });
      try {
        // Only the schema is in the file so far; the writer's own checkpoint (1,000 pages by default) is far off.
        const before = statSync(file).size;
        for (let i = 1; i <= 20; i++) await bg.append('s', one(i));
        await until('a background checkpoint', () => (bg.checkpointer?.count ?? 0) > 0);
        await bg.checkpointer!.idle();
        const last = bg.checkpointer!.last as { log: number; checkpointed: number };
        expect(last.log).toBeGreaterThan(0);
        expect(last.checkpointed).toBeGreaterThan(0);
        // What the thread copied is in the database file itself, which only a checkpoint writes.
        expect(statSync(file).size).toBeGreaterThan(before);
        expect((await bg.readAll()).map((e) => (e.data as { n: number }).n)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      } finally {
        await bg.close();
      }
      // The thread is gone: a store on the same file opens in exclusive mode, which no other connection may hold.
      const after = new SqliteEventStore({ file, synchronous: 'full', locking: 'exclusive' });
      try {
        expect((await after.readAll()).length).toBe(20);
      } finally {
        await after.close();
      }
    });

    it('copy nothing until enough frames wait (read from the WAL index), then copy them all', async () => {
      const file = join(dir, 'threshold.db');
      const bg = new SqliteEventStore({ file, synchronous: 'full', locking: 'normal', backgroundCheckpointMs: 0, backgroundCheckpointFrames: 200 });
      try {
        // A commit of one event writes a few frames: the first looks find fewer than 200 waiting.
        for (let i = 1; i <= 5; i++) {
          await bg.append('s', one(i));
          await bg.checkpointer!.idle();
        }
        expect(bg.checkpointer!.skipped).toBeGreaterThan(0);
        expect(bg.checkpointer!.count).toBe(0);
        // Those looks read the WAL index on this thread: no thread was started to find nothing to copy.
        expect(bg.checkpointer!.started).toBe(0);
        expect(bg.checkpointer!.threadRunning).toBe(false);
        const sizeBefore = statSync(file).size;
        // More commits until 200 frames wait: the next look copies every frame of the WAL.
        for (let i = 6; bg.checkpointer!.count === 0 && i <= 400; i++) {
          await bg.append('s', one(i));
          await bg.checkpointer!.idle();
        }
        expect(bg.checkpointer!.count).toBe(1);
        expect(bg.checkpointer!.started).toBe(1);
        const last = bg.checkpointer!.last as { log: number; checkpointed: number };
        expect(last.log).toBeGreaterThanOrEqual(200);
        expect(last.checkpointed).toBe(last.log);
        expect(statSync(file).size).toBeGreaterThan(sizeBefore);
        // Copied frames do not count: a look before the next commit (which starts the WAL over) finds none waiting.
        const skippedAfterCopy = bg.checkpointer!.skipped;
        bg.checkpointer!.poke();
        await bg.checkpointer!.idle();
        expect(bg.checkpointer!.skipped).toBe(skippedAfterCopy + 1);
        expect(bg.checkpointer!.count).toBe(1);
        // A forced look copies whatever waits, however little.
        await bg.append('s', one(1000));
        await bg.checkpointer!.idle();
        const skippedBefore = bg.checkpointer!.skipped;
        bg.checkpointer!.poke(Date.now(), true);
        await bg.checkpointer!.idle();
        expect(bg.checkpointer!.count).toBe(2);
        expect(bg.checkpointer!.skipped).toBe(skippedBefore);
      } finally {
        await bg.close();
      }
    });

    it('a sole writer in normal locking keeps the head and revisions in memory, and another one reads them back', async () => {
      // What the store writes next depends on whether it reads the log's head back: a row written
      // behind its back (which a sole writer's caller rules out) shows which one it does.
      const write = async (soleWriter: boolean): Promise<unknown> => {
        const file = join(dir, `sole-${soleWriter}.db`);
        const s = new SqliteEventStore({ file, synchronous: 'full', locking: 'normal', soleWriter });
        try {
          await s.append('a', one(1));
          await expect(s.append('a', one(2), { expectedRevision: 5n })).rejects.toThrow(/expected/i);
          const other = new Database(file);
          other.prepare("INSERT INTO events VALUES (2, 'x-2', 'b', 0, 'test.numbered.v1', '{}', '{}')").run();
          other.close();
          return await s.append('a', one(3), { expectedRevision: 0n }).then((r) => r.position, (e: Error) => e.message);
        } finally {
          await s.close();
        }
      };
      expect(await write(false)).toBe(3n);
      expect(await write(true)).toMatch(/UNIQUE/);
    });

    it('start their thread at the first commit, stop it once commits stop, and start it again at the next', async () => {
      const file = join(dir, 'idle.db');
      const bg = new SqliteEventStore({ file, synchronous: 'full', locking: 'normal' });
      // A checkpointer of this file whose thread stops after 300 ms without a poke.
      const cp = new WalCheckpointer(file, 'FULL', 0, 0, 300);
      try {
        await bg.append('s', one(1));
        expect(cp.threadRunning).toBe(false);
        cp.poke();
        // Started in a turn of its own, not inside the commit that poked.
        expect(cp.threadRunning).toBe(false);
        await cp.idle();
        expect(cp.threadRunning).toBe(true);
        expect(cp.count).toBe(1);
        // Pokes keep it running; without them it stops (one timer, no look).
        for (let i = 0; i < 4; i++) {
          await new Promise((r) => setTimeout(r, 100));
          cp.poke();
          expect(cp.threadRunning).toBe(true);
        }
        await until('the idle thread stopped', () => !cp.threadRunning);
        expect(cp.started).toBe(1);
        // The next commit's poke starts a new thread, which copies what waits.
        await bg.append('s', one(2));
        cp.poke();
        await cp.idle();
        expect(cp.started).toBe(2);
        expect(cp.count).toBe(6);
      } finally {
        await cp.close();
        await bg.close();
      }
      expect(cp.threadRunning).toBe(false);
    });

    (process.platform === 'linux' ? it : it.skip)('keep the store\'s lock on the WAL index while their thread comes and goes (Linux: reads /proc/locks)', async () => {
      if (process.platform !== 'linux') console.log('skipped: reads the process\'s POSIX locks from /proc/locks (Linux only)');
      // SQLite's connection holds a shared lock on the WAL index (byte 128 of the -shm file, its
      // "in use" lock) for as long as it is open. Closing any descriptor of that file drops every
      // lock the process holds on it: the checkpoint thread used to read the index through a
      // descriptor of its own and close it when it stopped for being idle.
      const file = join(dir, 'index-lock.db');
      const bg = new SqliteEventStore({ file, synchronous: 'full', locking: 'normal' });
      const cp = new WalCheckpointer(file, 'FULL', 0, 1, 300);
      const inUseLock = () => {
        const inode = statSync(`${file}-shm`).ino;
        return fs.readFileSync('/proc/locks', 'utf8').split('\n').some((line) => {
          const f = line.trim().split(/\s+/);
          return f[1] === 'POSIX' && f[4] === String(process.pid) && f[5]?.endsWith(`:${inode}`) && f[6] === '128';
        });
      };
      try {
        await bg.append('s', one(1));
        expect(inUseLock()).toBe(true);
        // Looks that read the index (one frame waits, at least), then one that copies (the thread starts).
        cp.poke(Date.now(), true);
        await cp.idle();
        cp.poke();
        await cp.idle();
        expect(cp.started).toBe(1);
        // The thread stops after 300 ms without a poke; the store goes on, its lock still held.
        await until('the idle thread stopped', () => !cp.threadRunning);
        expect(inUseLock()).toBe(true);
        await bg.append('s', one(2));
        expect(inUseLock()).toBe(true);
        await cp.close();
        expect(inUseLock()).toBe(true);
      } finally {
        await cp.close();
        await bg.close();
        cp.closeIndexFile();
      }
    });

    it('start no thread when closed right after the poke that would have started one', async () => {
      const file = join(dir, 'closed.db');
      const bg = new SqliteEventStore({ file, synchronous: 'full', locking: 'normal' });
      const cp = new WalCheckpointer(file, 'FULL', 0, 0, 300);
      try {
        await bg.append('s', one(1));
        cp.poke();
        await cp.close();
        expect(cp.started).toBe(0);
        expect(cp.threadRunning).toBe(false);
        // Closed for good: a later poke starts nothing either.
        cp.poke();
        await new Promise((r) => setImmediate(r));
        expect(cp.started).toBe(0);
      } finally {
        await bg.close();
      }
    });

    it('are refused with exclusive locking, with an error that says why', () => {
      expect(() => new SqliteEventStore({ file: join(dir, 'x.db'), locking: 'exclusive', backgroundCheckpointMs: 250 }))
        .toThrow(/background checkpoints need a database file in normal locking mode/);
    });
  });
});
