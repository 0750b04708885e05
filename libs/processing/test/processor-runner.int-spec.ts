import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore, type StoredEvent } from '@app/event-store';
import { CheckpointStore, ProcessorRunner, ProjectionFailedError } from '@app/processing';

/**
 * The runner against a real SQLite store and a real projection whose insert fails because of a
 * trigger (the same cause the e2e test uses): waiters are rejected with the processor's error,
 * and the runner resumes from its checkpoint once the cause is gone.
 */
describe('ProcessorRunner failure and recovery', () => {
  let dir: string;
  let store: SqliteEventStore;
  let runner: ProcessorRunner;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-runner-'));
    store = new SqliteEventStore({ file: join(dir, 'events.db') });
    store.db.exec('CREATE TABLE rm_test (n INTEGER PRIMARY KEY)');
    const insert = store.db.prepare('INSERT INTO rm_test (n) VALUES (?)');
    runner = new ProcessorRunner(store, new CheckpointStore(store.db), {
      name: 'test-projection',
      transactional: true,
      apply: (events: StoredEvent[]) => {
        for (const e of events) insert.run((e.data as { n: number }).n);
      },
    }, () => undefined, { initialMs: 10, maxMs: 40 });
    runner.start();
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
    // The checkpoint committed with the rows.
    expect(new CheckpointStore(store.db).get('test-projection')).toBe(8n);
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
});
