import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SqliteEventStore, uuidv7, type LogEvent, type NewEvent } from '@app/event-store';

/** The built module: its worker thread runs compiled JavaScript (`node scripts/build.mjs` first, as for every e2e test). */
const { LogPrefetch } = require(resolve(__dirname, '..', 'dist', 'libs', 'event-store', 'src', 'log-prefetch.js')) as typeof import('@app/event-store');

describe('LogPrefetch: the log read ahead on a worker thread (what admin rebuild reads with)', () => {
  let dir: string;
  let store: SqliteEventStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-prefetch-'));
    store = new SqliteEventStore({ file: join(dir, 'sluice.db') });
    for (let chunk = 0; chunk < 7; chunk++) {
      const events: NewEvent[] = Array.from({ length: 335 }, (_, i) => ({
        id: uuidv7(), type: 'test.happened.v1', data: { chunk, i, text: 'é\u0000"' }, metadata: { at: chunk * 1000 + i },
      }));
      await store.append(`s-${chunk % 3}`, events, { expectedRevision: 'any' });
    }
  });

  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('hands over exactly the events the store reads, in order, whatever the asked counts and pages', async () => {
    // The store's own fold read gives its events parsed when read (LazyLogEvent): compared by what they read as.
    const plain = ({ type, position, data, metadata }: LogEvent): LogEvent => ({ type, position, data, metadata });
    const all = store.readLogSync(0n, -1).map(plain);
    expect(all).toHaveLength(2345);
    // What the store's own fold read gives is the stored events without their id, stream and revision.
    expect(all).toEqual(store.readAllSync(0n, -1).map(plain));
    for (const [page, counts] of [[1000, [7, 1000, 3000, 1]], [64, [100, 5]]] as const) {
      const prefetch = LogPrefetch.open(store.db.name, 0n, page, 2)!;
      expect(prefetch).toBeDefined();
      try {
        const got: LogEvent[] = [];
        let after = 0n;
        for (let k = 0; ; k++) {
          const events = prefetch.read(after, counts[k % counts.length]);
          expect(events.length).toBeLessThanOrEqual(counts[k % counts.length]);
          if (events.length === 0) break;
          got.push(...events);
          after = events[events.length - 1].position;
        }
        expect(got).toEqual(all);
        expect(prefetch.read(after, 10)).toEqual([]);
      } finally {
        await prefetch.close();
      }
    }
  });

  it('starts after the position given, and refuses to read anywhere but forward from the last event returned', async () => {
    const prefetch = LogPrefetch.open(store.db.name, 2000n)!;
    try {
      const first = prefetch.read(2000n, 10);
      expect(first.map((e) => e.position)).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(2001 + i)));
      expect(() => prefetch.read(5n, 10)).toThrow(/forward only/);
    } finally {
      await prefetch.close();
    }
  });

  it('reports a log it cannot open instead of waiting for it', async () => {
    const prefetch = LogPrefetch.open(join(dir, 'missing.db'))!;
    try {
      expect(() => prefetch.read(0n, 10)).toThrow(/log prefetch failed/);
    } finally {
      await prefetch.close();
    }
  });
});
