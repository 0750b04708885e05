import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore, type NewEvent } from '@app/event-store';
import { QuietLoop, ScriptedLoad } from './scripted-load';

/**
 * `walCheckpointPages`: the WAL is checkpointed after fewer pages while the event loop has time to
 * spare, after more once it is saturated, on a real SQLite file.
 */
describe('SqliteEventStore: checkpoint size by the loop\'s load', () => {
  let dir: string;
  let store: SqliteEventStore;
  let load: ScriptedLoad;
  const file = () => join(dir, 'events.db');
  const walBytes = () => statSync(`${file()}-wal`).size;
  /** Commits of about 4 pages each (a 12 KB event), one at a time. */
  async function commits(count: number): Promise<void> {
    const event: NewEvent = { type: 'test.padded.v1', data: { pad: 'x'.repeat(12_000) } };
    for (let i = 0; i < count; i++) await store.append(`s-${i % 7}`, [event]);
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-checkpoint-size-'));
    load = new ScriptedLoad();
    store = new SqliteEventStore({
      file: file(), synchronous: 'full', locking: 'exclusive', fsyncPlacement: load, walCheckpointPages: { quiet: 50, busy: 400 },
    });
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('checkpoints after the quiet size while the loop is quiet, after the busy size once it is not', async () => {
    await commits(60);
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(50);
    // About 240 pages written: the WAL was checkpointed and started over, so it never held them all.
    const quietWal = walBytes();
    expect(quietWal).toBeLessThan(120 * 4096);

    load.quiet = false;
    await commits(60);
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(400);
    // Another 240 pages, none checkpointed: the WAL grew past what it held while quiet.
    expect(walBytes()).toBeGreaterThan(200 * 4096);

    load.quiet = true;
    await commits(1);
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(50);
    expect(store.checkpointResizes).toBe(3);
  });

  it('a slow fsync sends the fsync to the pool but leaves the checkpoints the quiet size', async () => {
    await store.close();
    const placement = new QuietLoop();
    store = new SqliteEventStore({
      file: file(), synchronous: 'full', locking: 'exclusive', fsyncPlacement: placement, walCheckpointPages: { quiet: 50, busy: 400 },
    });
    await commits(2);
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(50);
    const onLoop = store.fsyncsOnLoop;
    placement.tookOnLoop(1_000);
    await commits(60);
    // The fsyncs went to the pool (none more on the loop) ...
    expect(store.fsyncsOnLoop).toBe(onLoop);
    expect(placement.placedOnLoop).toBe(false);
    // ... and the WAL was still checkpointed after about 50 pages: it never held the ~240 written.
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(50);
    expect(walBytes()).toBeLessThan(120 * 4096);
  });

  it('leaves the setting alone when something else changed it (a rebuild turns checkpoints off)', async () => {
    await commits(1);
    store.db.pragma('wal_autocheckpoint = 0');
    load.quiet = false;
    await commits(3);
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
  });

  it('without walCheckpointPages the connection keeps its own setting', async () => {
    await store.close();
    store = new SqliteEventStore({ file: file(), synchronous: 'full', locking: 'exclusive', fsyncPlacement: load });
    store.db.pragma('wal_autocheckpoint = 777');
    await commits(3);
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(777);
    expect(store.checkpointResizes).toBe(0);
  });
});
