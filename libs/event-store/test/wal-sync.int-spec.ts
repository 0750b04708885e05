import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore, type NewEvent, type SqliteEventStoreOptions } from '@app/event-store';
import { deviceOf, lightSyncDir, mountOptionsOf, openWalSync, whyNotLight } from '../src/wal-sync';

/**
 * The WAL's sync without its inode (`native/wal-sync.c`): which syncs may leave the inode out
 * (only while SQLite overwrites the WAL in place, within the size and header of the last full
 * sync), on which filesystems, and that a failing sync still fails the appends that waited for it.
 */
describe('the WAL sync', () => {
  // The system's temporary directory, else one under the working directory.
  const found = lightSyncDir([tmpdir(), process.cwd()], 'sluice-wal-sync-');
  const light = found.dir ? it : it.skip;
  if (!found.dir) console.warn(`wal-sync: the light-sync cases are skipped: no directory here allows it (${found.reason})`);

  afterAll(() => {
    if (found.dir) rmSync(found.dir, { recursive: true, force: true });
  });

  const one = (n: number, pad = 0): NewEvent[] => [{ type: 'test.numbered.v1', data: { n, pad: 'x'.repeat(pad) } }];
  /** A store's syncs by kind: light and full (how many light ones were started on io_uring apart). */
  const kinds = (store: SqliteEventStore) => {
    const { light, full } = store.walSyncCounts();
    return { light, full };
  };
  /** A store of its own in a new directory under `found.dir`, closed after `body`. */
  async function withStore(prefix: string, options: Partial<SqliteEventStoreOptions>, body: (store: SqliteEventStore, dir: string) => Promise<void>): Promise<void> {
    const dir = mkdtempSync(join(found.dir!, prefix));
    const store = new SqliteEventStore({ file: join(dir, 'events.db'), synchronous: 'full', locking: 'normal', fsyncPlacement: 'loop', ...options });
    try {
      await body(store, dir);
    } finally {
      await store.close();
    }
  }

  describe.each([
    ['loop', 'normal', 'light'], ['loop', 'normal', 'ring'], ['pool', 'normal', 'light'], ['pool', 'normal', 'ring'],
    ['loop', 'exclusive', 'light'], ['loop', 'exclusive', 'ring'], ['pool', 'exclusive', 'light'],
  ] as const)('a store syncing on the %s, with %s locking, walSync %s', (placement, locking, walSync) => {
    let dir: string;
    let store: SqliteEventStore;
    beforeEach(() => {
      dir = mkdtempSync(join(found.dir ?? tmpdir(), `${placement}-${locking}-${walSync}-`));
      // `light` is the default: left unsaid, as the server leaves it.
      store = new SqliteEventStore({ file: join(dir, 'events.db'), synchronous: 'full', locking, fsyncPlacement: placement, ...(walSync === 'ring' ? { walSync } : {}) });
    });
    afterEach(async () => {
      await store.close();
    });

    light('leaves the inode out only while the WAL is overwritten within the size and header of its last full sync', async () => {
      expect(store.walSyncFallback).toBeUndefined();
      // A new WAL grows with every commit: each sync is a full one.
      for (let i = 0; i < 20; i++) await store.append(`s${i % 3}`, one(i));
      expect(kinds(store)).toEqual({ light: 0, full: 20 });
      const grown = statSync(join(dir, 'events.db-wal')).size;

      // Everything copied into the file: the next commit restarts the WAL from its beginning,
      // with a new header, which takes one full sync ...
      store.db.pragma('wal_checkpoint(RESTART)');
      await store.append('a', one(100));
      expect(kinds(store)).toEqual({ light: 0, full: 21 });
      // ... and the commits after it overwrite blocks the WAL had: light.
      for (let i = 0; i < 5; i++) await store.append('a', one(101 + i));
      expect(kinds(store)).toEqual({ light: 5, full: 21 });
      expect(statSync(join(dir, 'events.db-wal')).size).toBe(grown);

      // A commit that takes the WAL past its size has new blocks: full.
      await store.append('b', one(200, 1 << 20));
      expect(kinds(store)).toEqual({ light: 5, full: 22 });
      expect(statSync(join(dir, 'events.db-wal')).size).toBeGreaterThan(grown);

      // Truncated to nothing and written again: new blocks under a new header, full, until the
      // next restart (whose first commits fit in what the three before it wrote).
      store.db.pragma('wal_checkpoint(TRUNCATE)');
      for (let i = 0; i < 3; i++) await store.append('c', one(300 + i));
      expect(kinds(store)).toEqual({ light: 5, full: 25 });
      store.db.pragma('wal_checkpoint(RESTART)');
      await store.append('c', one(303));
      await store.append('c', one(304));
      expect(kinds(store)).toEqual({ light: 6, full: 26 });

      // What was committed is all there, in order.
      expect((await store.readAll()).map((e) => (e.data as { n: number }).n)).toEqual([
        ...Array.from({ length: 20 }, (_, i) => i), 100, 101, 102, 103, 104, 105, 200, 300, 301, 302, 303, 304,
      ]);
      // With `ring`, on the loop each sync was started on io_uring at its commit (where the
      // kernel has it), and decided light or full there by the same rule; on the pool none.
      // Without it, none anywhere, and the store says the ring was not asked for.
      const ring = store.walSyncRingUnavailable;
      if (walSync === 'light') expect(ring).toBe('not asked for');
      expect(store.walSyncCounts().started).toBe(placement === 'loop' && walSync === 'ring' && ring === undefined ? 32 : 0);
    });
  });

  describe.each([['loop', 'light'], ['loop', 'ring'], ['pool', 'light']] as const)('a light sync that fails on the %s, walSync %s', (placement, walSync) => {
    light('fails the appends it covers, as an fdatasync that fails does', async () => {
      await withStore(`failing-${placement}-${walSync}-`, { fsyncPlacement: placement, walSync }, async (store) => {
        for (let i = 0; i < 5; i++) await store.append('a', one(i));
        store.db.pragma('wal_checkpoint(RESTART)');
        await store.append('a', one(10));
        // The flush file's descriptor gone: the next (light) sync fails with EBADF.
        (store as unknown as { walSync: { close(): void } }).walSync.close();
        await expect(store.append('a', one(11))).rejects.toThrow(/fsync of the log failed: .*EBADF: Bad file descriptor \(sync of the WAL\)/);
        expect(kinds(store)).toEqual({ light: 0, full: 6 });
      });
    });
  });

  light('starts the writeback of a commit that a sync will follow at once, not of a commit-only one', async () => {
    await withStore('writeback-', {}, async (store) => {
      const sync = (store as unknown as { walSync: { writeback(): void } }).walSync;
      const order: string[] = [];
      const original = sync.writeback.bind(sync);
      sync.writeback = () => {
        order.push('writeback');
        original();
      };
      store.onAppended(() => order.push('commit announced'));
      await store.append('a', one(1));
      // Right after the commit, before its subscribers hear of it (and the fsync after them).
      expect(order).toEqual(['writeback', 'commit announced']);
      await store.append('a', one(2), { durability: 'commit' });
      expect(order).toEqual(['writeback', 'commit announced', 'commit announced']);
      await Promise.all([store.append('a', one(3), { durability: 'commit' }), store.append('b', one(4))]);
      expect(order.filter((o) => o === 'writeback')).toHaveLength(2);
      expect((await store.readAll()).map((e) => (e.data as { n: number }).n)).toEqual([1, 2, 3, 4]);
    });
  });

  light('a sync started at a commit covers what was committed until then; a commit before it ends waits for the next', async () => {
    await withStore('early-', { walSync: 'ring' }, async (store) => {
      for (let i = 0; i < 3; i++) await store.append('a', one(i));
      store.db.pragma('wal_checkpoint(RESTART)');
      await store.append('a', one(3));
      const sync = (store as unknown as { walSync: { start(): boolean; finish(): boolean; ringUnavailable(): string | null } }).walSync;
      if (sync.ringUnavailable() !== null) {
        console.warn(`wal-sync: the early-start case is skipped: io_uring is unavailable here (${sync.ringUnavailable()})`);
        return;
      }
      const order: string[] = [];
      const start = sync.start.bind(sync);
      const finish = sync.finish.bind(sync);
      sync.start = () => {
        const started = start();
        order.push(started ? 'started' : 'not started');
        return started;
      };
      sync.finish = () => {
        order.push('finished');
        return finish();
      };
      // B is appended as A's commit is announced, so it commits (its flush) after A's sync was
      // started and before that sync is waited for.
      let second: Promise<unknown> | undefined;
      store.onAppended(() => {
        second ??= store.append('b', one(5)).then(() => order.push('b acknowledged'));
      });
      const fsyncs = store.fsyncCount;
      await store.append('a', one(4)).then(() => order.push('a acknowledged'));
      await second;
      // A's sync started at its commit and was finished before A was acknowledged; B, committed
      // meanwhile, waited for a sync started after its own commit.
      expect(order.filter((o) => o !== 'a acknowledged')).toEqual(['started', 'finished', 'started', 'finished', 'b acknowledged']);
      expect(order.indexOf('a acknowledged')).toBeGreaterThan(order.indexOf('finished'));
      expect(store.fsyncCount - fsyncs).toBe(2);
      expect((await store.readAll()).map((e) => (e.data as { n: number }).n)).toEqual([0, 1, 2, 3, 4, 5]);
    });
  });

  light('is left out with walSync: fdatasync, and each sync is then a full one', async () => {
    await withStore('off-', { walSync: 'fdatasync' }, async (store, dir) => {
      expect(store.walSyncFallback).toBe('walSync: fdatasync');
      await store.append('a', one(1));
      store.db.pragma('wal_checkpoint(RESTART)');
      for (let i = 0; i < 3; i++) await store.append('a', one(2 + i));
      expect(kinds(store)).toEqual({ light: 0, full: 4 });
      expect(existsSync(join(dir, 'events.db-flush'))).toBe(false);
    });
  });

  light('starts no writeback while its syncs go to the pool: the pool\'s sync writes the pages back itself', async () => {
    await withStore('writeback-pool-', { fsyncPlacement: 'pool' }, async (store) => {
      const sync = (store as unknown as { walSync: { writeback(): void } }).walSync;
      let writebacks = 0;
      const original = sync.writeback.bind(sync);
      sync.writeback = () => {
        writebacks++;
        original();
      };
      for (let i = 0; i < 5; i++) await store.append('a', one(i));
      store.db.pragma('wal_checkpoint(RESTART)');
      for (let i = 0; i < 3; i++) await store.append('a', one(10 + i));
      expect(writebacks).toBe(0);
      // Still durable the same way: full syncs of the new WAL, light ones after its restart.
      expect(kinds(store)).toEqual({ light: 2, full: 6 });
      expect((await store.readAll()).map((e) => (e.data as { n: number }).n)).toEqual([0, 1, 2, 3, 4, 10, 11, 12]);
    });
  });

  light('creates its flush file private, and never writes it', async () => {
    await withStore('flush-', {}, async (store, dir) => {
      for (let i = 0; i < 5; i++) await store.append('a', one(i));
      store.db.pragma('wal_checkpoint(RESTART)');
      for (let i = 0; i < 3; i++) await store.append('a', one(10 + i));
      expect(kinds(store)).toEqual({ light: 2, full: 6 });
      const flush = statSync(join(dir, 'events.db-flush'));
      expect(flush.mode & 0o777).toBe(0o600);
      expect(flush.size).toBe(0);
    });
  });

  describe('a failing sync', () => {
    /** A stand-in WAL: a 32-byte header and a page, in a file of its own. */
    function fakeWal(dir: string): { file: string; fd: number } {
      const file = join(dir, 'x.db');
      writeFileSync(`${file}-wal`, Buffer.alloc(32 + 4096, 7));
      return { file, fd: openSync(`${file}-wal`, 'r') };
    }

    light('throws with the errno on the calling thread, and calls back with it from the pool', async () => {
      const dir = mkdtempSync(join(found.dir!, 'fail-'));
      const wal = fakeWal(dir);
      const sync = openWalSync(wal.file, wal.fd)!;
      expect(sync).not.toBeNull();
      // The first sync is a full one (it sets the reference), the second a light one.
      expect(sync.sync()).toBe(false);
      expect(sync.sync()).toBe(true);
      // A light sync whose flush file is gone fails, naming the error.
      sync.close();
      expect(() => sync.sync()).toThrow(expect.objectContaining({ code: 'EBADF', message: expect.stringMatching(/^EBADF: .*sync of the WAL/) }));
      const viaPool = await new Promise<NodeJS.ErrnoException | null>((resolve) => sync.syncAsync((err) => resolve(err)));
      expect(viaPool).toEqual(expect.objectContaining({ code: 'EBADF' }));
      expect(sync.counts()).toEqual({ light: 1, full: 1, started: 0 });
      closeSync(wal.fd);
    });

    light('starts a sync on io_uring and waits for it later, light or full by the rule; a failure is the finish\'s', async () => {
      const dir = mkdtempSync(join(found.dir!, 'ring-'));
      const wal = fakeWal(dir);
      const sync = openWalSync(wal.file, wal.fd, () => {}, true)!;
      const disabled = existsSync('/proc/sys/kernel/io_uring_disabled') ? readFileSync('/proc/sys/kernel/io_uring_disabled', 'utf8').trim() : 'absent';
      if (sync.ringUnavailable() !== null) {
        // Only where the kernel refuses io_uring (disabled, a seccomp filter): not on this machine.
        expect(disabled).not.toBe('0');
        console.warn(`wal-sync: the io_uring case is skipped: ${sync.ringUnavailable()} (kernel.io_uring_disabled ${disabled})`);
        sync.close();
        closeSync(wal.fd);
        return;
      }
      // No full sync yet: the first one started is full (finish says not light), and it sets
      // the reference for the next, light.
      expect(sync.start()).toBe(true);
      expect(sync.finish()).toBe(false);
      expect(sync.start()).toBe(true);
      expect(() => sync.start()).toThrow(/start while a started sync is not finished/);
      expect(sync.finish()).toBe(true);
      expect(() => sync.finish()).toThrow(/finish without a started sync/);
      // SQLite restarting the WAL (a new header): full again, then light; started or not.
      const w = openSync(`${wal.file}-wal`, 'r+');
      writeSync(w, Buffer.from([5, 6, 7, 8]), 0, 4, 12);
      closeSync(w);
      expect(sync.start()).toBe(true);
      expect(sync.finish()).toBe(false);
      expect(sync.sync()).toBe(true);
      expect(sync.start()).toBe(true);
      expect(sync.finish()).toBe(true);
      // Grown past the size of the last full sync: full.
      writeFileSync(`${wal.file}-wal`, Buffer.alloc(4096), { flag: 'a' });
      expect(sync.start()).toBe(true);
      expect(sync.finish()).toBe(false);
      expect(sync.counts()).toEqual({ light: 3, full: 3, started: 5 });
      // The flush file's descriptor gone: the start is taken, and its finish fails with EBADF
      // (not with the ECANCELED of the pages' write linked to it).
      sync.close();
      expect(sync.start()).toBe(true);
      expect(() => sync.finish()).toThrow(expect.objectContaining({ code: 'EBADF', message: expect.stringMatching(/^EBADF: .*sync of the WAL/) }));
      expect(sync.counts()).toEqual({ light: 3, full: 3, started: 6 });
      closeSync(wal.fd);
    });

    light('starts nothing on io_uring unless asked to', async () => {
      const dir = mkdtempSync(join(found.dir!, 'no-ring-'));
      const wal = fakeWal(dir);
      const sync = openWalSync(wal.file, wal.fd)!;
      expect(sync.ringUnavailable()).toBe('not asked for');
      expect(sync.sync()).toBe(false);
      expect(sync.start()).toBe(false);
      expect(sync.sync()).toBe(true);
      expect(sync.counts()).toEqual({ light: 1, full: 1, started: 0 });
      sync.close();
      closeSync(wal.fd);
    });

    light('goes back to a full sync once the header changes, and from the pool reports light or not', async () => {
      const dir = mkdtempSync(join(found.dir!, 'header-'));
      const wal = fakeWal(dir);
      const sync = openWalSync(wal.file, wal.fd)!;
      const viaPool = () => new Promise<boolean>((resolve, reject) => sync.syncAsync((err, isLight) => (err ? reject(err) : resolve(isLight))));
      expect(await viaPool()).toBe(false);
      expect(await viaPool()).toBe(true);
      // SQLite restarting the WAL: a new checkpoint sequence in the header.
      const w = openSync(`${wal.file}-wal`, 'r+');
      writeSync(w, Buffer.from([1, 2, 3, 4]), 0, 4, 12);
      closeSync(w);
      expect(await viaPool()).toBe(false);
      expect(await viaPool()).toBe(true);
      // Shorter than a header (truncated): full, and full again until a full sync saw a header.
      writeFileSync(`${wal.file}-wal`, Buffer.alloc(0));
      expect(sync.sync()).toBe(false);
      writeFileSync(`${wal.file}-wal`, Buffer.alloc(32 + 4096, 9));
      expect(sync.sync()).toBe(false);
      expect(sync.sync()).toBe(true);
      sync.close();
      closeSync(wal.fd);
    });
  });

  describe('where it is allowed', () => {
    it('not on a filesystem other than ext2/3/4 (tmpfs), which says its type', () => {
      if (!existsSync('/dev/shm')) {
        console.warn('wal-sync: no /dev/shm here to check a tmpfs against');
        return;
      }
      expect(whyNotLight('/dev/shm')).toMatch(/not on ext2\/3\/4 \(filesystem type 0x1021994\)/);
    });

    it("reads the mount's and its filesystem's options for a path, and refuses data=journal", () => {
      const dir = mkdtempSync(join(tmpdir(), 'sluice-mountinfo-'));
      try {
        const majorMinor = deviceOf(dir);
        const info = join(dir, 'mountinfo');
        writeFileSync(info, [
          `21 1 0:99 / /other rw - tmpfs tmpfs rw`,
          `22 1 ${majorMinor} / / rw,relatime shared:1 - ext4 /dev/vda rw,data=journal`,
          '',
        ].join('\n'));
        expect(mountOptionsOf(dir, info)).toEqual(['rw', 'relatime', 'rw', 'data=journal']);
        expect(mountOptionsOf(dir, join(dir, 'missing'))).toBeUndefined();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    light('not on ext2/3/4 mounted with data=journal, which keeps the data in the journal', () => {
      const info = join(found.dir!, 'mountinfo');
      const majorMinor = deviceOf(found.dir!);
      writeFileSync(info, `22 1 ${majorMinor} / / rw,relatime - ext4 /dev/vda rw,data=journal\n`);
      expect(whyNotLight(found.dir!, info)).toBe('mounted with data=journal');
      writeFileSync(info, `22 1 ${majorMinor} / / rw,relatime - ext4 /dev/vda rw,data=ordered\n`);
      expect(whyNotLight(found.dir!, info)).toBeUndefined();
      expect(whyNotLight(found.dir!, join(found.dir!, 'missing'))).toBe(`the mount options cannot be read (${join(found.dir!, 'missing')})`);
    });

    light('on this ext2/3/4 directory, with its real mount options', () => {
      const options = mountOptionsOf(found.dir!);
      expect(options).toBeDefined();
      expect(options).not.toContain('data=journal');
      expect(statSync(found.dir!).isDirectory()).toBe(true);
    });
  });
});
