import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore, type NewEvent } from '@app/event-store';
import { COMMIT_ONLY_SYNC_MS } from '../src/sqlite-event-store';

/**
 * `synchronous: 'normal'` acknowledges at the commit, and the store syncs the WAL in the background
 * within COMMIT_ONLY_SYNC_MS of a commit (one fdatasync on the libuv pool for all the commits of
 * that time), so SQLite's checkpoint does not find a whole cycle of the WAL unsynced on the event
 * loop. A real SQLite file.
 */
describe('SqliteEventStore: the WAL synced in the background in normal mode', () => {
  let dir: string;
  let store: SqliteEventStore;
  const event: NewEvent = { type: 'test.thing.v1', data: { n: 1 } };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-writeback-'));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('one background fdatasync after a stretch of commits, none while nothing is written', async () => {
    store = new SqliteEventStore({ file: join(dir, 'events.db'), synchronous: 'normal', locking: 'exclusive' });
    await store.append('s-1', [event]);
    // Acknowledged at the commit: the sync comes later.
    expect(store.writebackCount).toBe(0);
    // More commits within the window share the one sync.
    for (let i = 0; i < 10; i++) {
      await store.append('s-1', [event]);
      await sleep(5);
    }
    await sleep(COMMIT_ONLY_SYNC_MS + 150);
    expect(store.writebackCount).toBe(1);
    // Nothing written since: no further sync, and no timer keeps the process awake.
    await sleep(COMMIT_ONLY_SYNC_MS + 100);
    expect(store.writebackCount).toBe(1);
    // The next commit is synced in turn.
    await store.append('s-1', [event]);
    await sleep(COMMIT_ONLY_SYNC_MS + 150);
    expect(store.writebackCount).toBe(2);
    // The durable mode's own counter is not touched.
    expect(store.fsyncCount).toBe(0);
  });

  it('closing drops a sync not yet started, and closes cleanly once one has started', async () => {
    store = new SqliteEventStore({ file: join(dir, 'events.db'), synchronous: 'normal', locking: 'exclusive' });
    await store.append('s-1', [event]);
    await store.close();
    await sleep(COMMIT_ONLY_SYNC_MS + 100);
    expect(store.writebackCount).toBe(0);

    store = new SqliteEventStore({ file: join(dir, 'events.db'), synchronous: 'normal', locking: 'exclusive' });
    await store.append('s-1', [event]);
    // Close as soon as the sync has started (close waits for one still in flight before it closes the file).
    await sleep(COMMIT_ONLY_SYNC_MS);
    while (store.writebackCount === 0) await sleep(1);
    await store.close();
    expect(store.writebackCount).toBe(1);
  });

  it('full mode has its own fsyncs and no background sync', async () => {
    store = new SqliteEventStore({ file: join(dir, 'events.db'), synchronous: 'full', locking: 'exclusive' });
    await store.append('s-1', [event]);
    await sleep(COMMIT_ONLY_SYNC_MS + 100);
    expect(store.fsyncCount).toBeGreaterThan(0);
    expect(store.writebackCount).toBe(0);
  });
});
