import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Appends `count` records of 3 events (two emits and a run's completion, about a run's record) to
 * a file store, each awaited (one commit each), for counting instructions per append:
 * `valgrind --tool=callgrind node dist/bench/probe/append-probe.js <checkout> <count>` with two
 * counts (2,000 and 10,000), the difference divided by 8,000. `<checkout>` is the root of a built
 * checkout, so two builds are counted by the same script.
 */
async function main(): Promise<void> {
  const root = process.argv[2] ?? process.cwd();
  const count = Number(process.argv[3] ?? 2000);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { SqliteEventStore } = require(join(root, 'dist/libs/event-store/src')) as typeof import('@app/event-store');
  const dir = mkdtempSync(join(tmpdir(), 'sluice-append-probe-'));
  const store = new SqliteEventStore({ file: join(dir, 'events.db'), locking: 'exclusive', synchronous: 'normal' });
  const emit = { sourceId: 'dc_abcdefghijklmnop', emitId: 'x', summaryId: '1-1', event: { hello: 'world', n: 1 }, meta: { id: 'a', name: 'chan', ts: 1 } };
  try {
    for (let i = 0; i < count; i++) {
      await store.append(`source-dc_${i % 10}`, [
        { type: 'source.event_emitted.v1', data: { ...emit, n: i } },
        { type: 'source.event_emitted.v1', data: { ...emit, n: i + 1 } },
        { type: 'source.run_completed.v1', data: { sourceId: 'dc_x', runId: `r${i}`, ok: true, logs: [{ level: 'log', message: 'hi', ts: 1 }], emitted: 2, durationMs: 1 } },
      ], { durability: 'commit' });
    }
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
