import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore, type StoredEvent } from '@app/event-store';
import { CheckpointStore, FOLLOWS_LOG, ProcessorRunner, ProjectionFailedError } from '@app/processing';

/**
 * The runner against a real SQLite store and a real projection whose insert fails because of a
 * trigger (the same cause the e2e test uses): waiters are rejected with the processor's error,
 * and the runner resumes from its checkpoint once the cause is gone.
 */
describe('ProcessorRunner failure and recovery', () => {
  let dir: string;
  let store: SqliteEventStore;
  let runner: ProcessorRunner;

  /**
   * Opens the store on the test's file and starts a runner of the test projection on it. A row
   * applied twice fails the table's primary key, and the runner with it.
   */
  function open(): void {
    store = new SqliteEventStore({ file: join(dir, 'events.db') });
    store.db.exec('CREATE TABLE IF NOT EXISTS rm_test (n INTEGER PRIMARY KEY)');
    const insert = store.db.prepare('INSERT INTO rm_test (n) VALUES (?)');
    runner = new ProcessorRunner(store, new CheckpointStore(store.db), {
      name: 'test-projection',
      transactional: true,
      apply: (events: StoredEvent[]) => {
        for (const e of events) insert.run((e.data as { n: number }).n);
      },
    }, () => undefined, { initialMs: 10, maxMs: 40 });
    runner.start();
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-runner-'));
    open();
  });

  afterEach(async () => {
    await runner.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const append = async (n: number) => (await store.append(`test-${n}`, [{ type: 'test.numbered.v1', data: { n } }])).position;
  const rows = () => (store.db.prepare('SELECT n FROM rm_test ORDER BY n').all() as { n: number }[]).map((r) => r.n);

  /** Waits for `position`, ignoring the failures of attempts made while the cause is still there. */
  async function eventuallyProjected(position: bigint): Promise<void> {
    for (;;) {
      try {
        return await runner.waitFor(position);
      } catch (err) {
        expect(err).toBeInstanceOf(ProjectionFailedError);
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }

  it('rejects waiters already queued and new ones with the cause, then recovers from the checkpoint', async () => {
    await runner.waitFor(await append(1));
    expect(rows()).toEqual([1]);

    store.db.exec("CREATE TRIGGER t BEFORE INSERT ON rm_test BEGIN SELECT RAISE(ABORT, 'boom'); END");
    const position = await append(2);
    // Queued before the batch is applied: it must settle with the failure, not hang.
    const queued = runner.waitFor(position);
    await expect(queued).rejects.toThrow(ProjectionFailedError);
    await expect(queued).rejects.toThrow(/test-projection failed: boom/);
    expect(runner.error).toBeInstanceOf(ProjectionFailedError);
    expect((runner.error!.cause as Error).message).toBe('boom');
    // While it is failed, new waiters are rejected too (the retries keep failing).
    await expect(runner.waitFor(await append(3))).rejects.toThrow(ProjectionFailedError);
    expect(rows()).toEqual([1]);

    store.db.exec('DROP TRIGGER t');
    await eventuallyProjected(position);
    expect(runner.error).toBeUndefined();
    await runner.waitFor(await append(4));
    expect(rows()).toEqual([1, 2, 3, 4]);
  });

  it("once caught up, folds each group inside the writer's transaction: the log is not read back, nothing is applied twice", async () => {
    await runner.waitFor(await append(1));
    const reads = jest.spyOn(store, 'readAllSync');
    // Appends in separate turns and in one group, each waited for by the runner.
    for (let n = 2; n <= 5; n++) await runner.waitFor(await append(n));
    const group = await Promise.all([6, 7, 8].map((n) => append(n)));
    await runner.waitFor(group[group.length - 1]);
    expect(rows()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(reads).not.toHaveBeenCalled();
    expect(runner.position).toBe(8n);
    // The checkpoint committed with the first fold says the fold follows the log, whose head is 8.
    expect(new CheckpointStore(store.db).get('test-projection')).toBe(FOLLOWS_LOG);
    expect(store.committedHead()).toBe(8n);
    // A catch-up read now finds nothing new (the subscription's position moved with the folds).
    await runner.caughtUp();
    expect(rows()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    reads.mockRestore();
  });

  it('after a failure it catches up through its subscription, then folds inline again', async () => {
    await runner.waitFor(await append(1));
    store.db.exec("CREATE TRIGGER t BEFORE INSERT ON rm_test BEGIN SELECT RAISE(ABORT, 'boom'); END");
    await expect(runner.waitFor(await append(2))).rejects.toThrow(ProjectionFailedError);
    store.db.exec('DROP TRIGGER t');
    await eventuallyProjected(2n);
    const reads = jest.spyOn(store, 'readAllSync');
    await runner.waitFor(await append(3));
    expect(reads).not.toHaveBeenCalled();
    expect(rows()).toEqual([1, 2, 3]);
    reads.mockRestore();
  });

  it('a side effect that throws after an inline commit leaves nobody waiting', async () => {
    await runner.stop();
    const insert = store.db.prepare('INSERT INTO rm_test (n) VALUES (?)');
    const errors = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    let calls = 0;
    runner = new ProcessorRunner(store, new CheckpointStore(store.db), {
      name: 'test-projection',
      transactional: true,
      apply: (events: StoredEvent[]) => {
        for (const e of events) insert.run((e.data as { n: number }).n);
      },
      afterCommit: () => {
        calls++;
        throw new Error('side effect failed');
      },
    }, () => undefined, { initialMs: 10, maxMs: 40 });
    runner.start();
    // Waiting before the appends commit: released by the inline commit, whatever its side effects do.
    const waiting = Promise.all([runner.waitFor(1n), runner.waitFor(2n)]);
    await append(1);
    await append(2);
    const outcome = await Promise.race([waiting.then(() => 'released'), new Promise((r) => setTimeout(() => r('still waiting after 5 s'), 5000))]);
    expect(outcome).toBe('released');
    expect(rows()).toEqual([1, 2]);
    expect(calls).toBeGreaterThanOrEqual(1);
    errors.mockRestore();
  });

  it('stops retrying once stopped', async () => {
    store.db.exec("CREATE TRIGGER t BEFORE INSERT ON rm_test BEGIN SELECT RAISE(ABORT, 'boom'); END");
    await expect(runner.waitFor(await append(1))).rejects.toThrow(ProjectionFailedError);
    await runner.stop();
    store.db.exec('DROP TRIGGER t');
    await new Promise((r) => setTimeout(r, 100));
    expect(rows()).toEqual([]);
  });

  describe('a checkpoint that follows the log', () => {
    const checkpoint = () => new CheckpointStore(store.db).get('test-projection');

    /** Counts the writes to the checkpoint row (a trigger: the statements themselves, not a spy). */
    function countCheckpointWrites(): () => number {
      store.db.exec(`CREATE TABLE IF NOT EXISTS cp_writes (n INTEGER);
        CREATE TRIGGER IF NOT EXISTS cp_update AFTER UPDATE ON checkpoints BEGIN INSERT INTO cp_writes VALUES (1); END;
        CREATE TRIGGER IF NOT EXISTS cp_insert AFTER INSERT ON checkpoints BEGIN INSERT INTO cp_writes VALUES (1); END;`);
      return () => (store.db.prepare('SELECT count(*) AS c FROM cp_writes').get() as { c: number }).c;
    }

    /**
     * What a crash leaves: the store and runner are dropped without stop() (which would write the
     * position back), and a new store and runner open the same file, as a restarted server does.
     */
    async function crashAndRestart(): Promise<void> {
      // The old runner is silenced without its stop() (no retry, no subscription, no fold), and
      // the store's connection goes, as in a crash.
      const old = runner as unknown as { detachInline?(): void; subscription?: { stop(): Promise<void> }; retryTimer?: NodeJS.Timeout; stopped: boolean };
      old.stopped = true;
      clearTimeout(old.retryTimer);
      old.detachInline?.();
      await old.subscription?.stop();
      await store.close();
      open();
    }

    it('is written once, by the first inline fold, not in every commit', async () => {
      await runner.waitFor(await append(1));
      const writes = countCheckpointWrites();
      for (let n = 2; n <= 6; n++) await runner.waitFor(await append(n));
      expect(writes()).toBe(0);
      expect(checkpoint()).toBe(FOLLOWS_LOG);
      expect(rows()).toEqual([1, 2, 3, 4, 5, 6]);
    });

    it('after a crash, the restarted runner is at the head: nothing applied twice, nothing skipped', async () => {
      for (let n = 1; n <= 5; n++) await runner.waitFor(await append(n));
      await crashAndRestart();
      expect(runner.position).toBe(5n);
      expect(runner.error).toBeUndefined();
      await runner.waitFor(await append(6));
      await runner.caughtUp();
      expect(runner.error).toBeUndefined();
      expect(rows()).toEqual([1, 2, 3, 4, 5, 6]);
      expect(checkpoint()).toBe(FOLLOWS_LOG);
    });

    it('a group the fold does not apply writes the real position in its own transaction; a crash then catches up from it', async () => {
      for (let n = 1; n <= 3; n++) await runner.waitFor(await append(n));
      expect(checkpoint()).toBe(FOLLOWS_LOG);
      // The fold fails on 4: the group is written again without it, with the real position (3).
      store.db.exec("CREATE TRIGGER t BEFORE INSERT ON rm_test WHEN NEW.n = 4 BEGIN SELECT RAISE(ABORT, 'boom'); END");
      await expect(runner.waitFor(await append(4))).rejects.toThrow(ProjectionFailedError);
      expect(checkpoint()).toBe(3n);
      // While it is failed, the next appends are not folded either, and the checkpoint stays 3.
      await append(5);
      expect(checkpoint()).toBe(3n);
      // Restarted while the cause is still there: it resumes from 3, and 4 fails again.
      await crashAndRestart();
      await expect(runner.waitFor(5n)).rejects.toThrow(ProjectionFailedError);
      expect(runner.position).toBe(3n);
      expect(rows()).toEqual([1, 2, 3]);
      store.db.exec('DROP TRIGGER t');
      await eventuallyProjected(5n);
      expect(rows()).toEqual([1, 2, 3, 4, 5]);
      // Caught up through the subscription (real positions), then inline again, which follows the log.
      await runner.waitFor(await append(6));
      expect(checkpoint()).toBe(FOLLOWS_LOG);
      await crashAndRestart();
      expect(runner.position).toBe(6n);
      await runner.waitFor(await append(7));
      expect(rows()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    });

    it('stop() writes the real position back, so what is appended after it is applied at the next start', async () => {
      for (let n = 1; n <= 3; n++) await runner.waitFor(await append(n));
      expect(checkpoint()).toBe(FOLLOWS_LOG);
      await runner.stop();
      expect(checkpoint()).toBe(3n);
      await append(4);
      await append(5);
      expect(rows()).toEqual([1, 2, 3]);
      // The restarted runner starts from 3 (4 and 5 are applied once, by its catch-up: a second
      // application would fail the rows' primary key and the runner with it).
      await crashAndRestart();
      await runner.waitFor(5n);
      await runner.caughtUp();
      expect(runner.error).toBeUndefined();
      expect(rows()).toEqual([1, 2, 3, 4, 5]);
    });

    it('a store that cannot say where the log ends refuses a checkpoint that follows it', async () => {
      await runner.waitFor(await append(1));
      const { InMemoryEventStore } = await import('@app/event-store');
      const other = new ProcessorRunner(new InMemoryEventStore(), new CheckpointStore(store.db), {
        name: 'test-projection', transactional: true, apply: () => undefined,
      });
      expect(() => other.start()).toThrow(/follows the log, and this event store cannot say where the log ends/);
    });
  });
});
