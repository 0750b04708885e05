import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteEventStore, type NewEvent } from '@app/event-store';

const WRITERS = 200;
const APPENDS_PER_WRITER = 100;
const BATCH_SIZE = 100;
const BATCHES = 200;
const READ_PAGE = 1000;
const RUNS = 3;

function sampleEvent(writer: number, n: number): NewEvent {
  return {
    type: 'source.event_emitted.v1',
    data: { emitterId: `dc_${writer}`, event: { n, body: 'hello wörld', at: 1_700_000_000_000 + n } },
    metadata: { correlationId: `corr-${writer}-${n}`, actor: 'system' },
  };
}

function perSecond(count: number, startNs: bigint): number {
  return Math.round(count / (Number(process.hrtime.bigint() - startNs) / 1e9));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/**
 * Single-event appends from many concurrent writers (each awaits its own append, with the
 * exact expected revision, as actors do), so the store groups them into shared commits.
 */
async function appendSingleConcurrently(store: SqliteEventStore): Promise<number> {
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, writer) => {
      const stream = `source-w${writer}`;
      for (let n = 0; n < APPENDS_PER_WRITER; n++) {
        await store.append(stream, [sampleEvent(writer, n)], {
          expectedRevision: n === 0 ? 'no_stream' : BigInt(n - 1),
        });
      }
    }),
  );
  return perSecond(WRITERS * APPENDS_PER_WRITER, start);
}

/** One writer appending batches of 100 events one after the other; events per second. */
async function appendBatches(store: SqliteEventStore): Promise<number> {
  const start = process.hrtime.bigint();
  for (let b = 0; b < BATCHES; b++) {
    const events = Array.from({ length: BATCH_SIZE }, (_, n) => sampleEvent(b, n));
    await store.append(`source-b${b}`, events, { expectedRevision: 'no_stream' });
  }
  return perSecond(BATCHES * BATCH_SIZE, start);
}

/** Reads the whole log page by page, as a catching-up subscription does; events per second. */
async function readEverything(store: SqliteEventStore): Promise<number> {
  const start = process.hrtime.bigint();
  let after = 0n;
  let count = 0;
  for (;;) {
    const page = await store.readAll({ after, maxCount: READ_PAGE });
    if (page.length === 0) break;
    count += page.length;
    after = page[page.length - 1].position;
  }
  return perSecond(count, start);
}

/**
 * Throughput of the embedded event store on temporary SQLite files under `dir`, for
 * synchronous=normal and full: medians of 3 runs of 20k single-event appends from 200
 * concurrent writers, 20k events in batches of 100, and reading the resulting 40k events back.
 */
export async function benchEventStore(dir: string): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  for (const synchronous of ['normal', 'full'] as const) {
    const single: number[] = [];
    const batched: number[] = [];
    const read: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const runDir = mkdtempSync(join(dir, 'event-store-bench-'));
      const store = new SqliteEventStore({ file: join(runDir, 'events.db'), synchronous });
      try {
        single.push(await appendSingleConcurrently(store));
        batched.push(await appendBatches(store));
        read.push(await readEverything(store));
      } finally {
        await store.close();
        rmSync(runDir, { recursive: true, force: true });
      }
    }
    figures[`sqlite.${synchronous}.singleEventAppendsConcurrent.perSec`] = median(single);
    figures[`sqlite.${synchronous}.batchOf100Appends.eventsPerSec`] = median(batched);
    figures[`sqlite.${synchronous}.readAll.eventsPerSec`] = median(read);
  }
  return figures;
}
