import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ComponentDefinition, decideSource, evolveSource, ExecutionResult, initialSourceState, NewSourceEvent, SecretBox, SluiceEvent, SourceConfig,
  sourceSnapshot, Streams,
} from '../libs/domain/src';
import { SqliteEventStore, uuidv7 } from '../libs/event-store/src';
import type { SandboxResult } from '../libs/sandbox/src';
import { SourceActor } from '../libs/engine/src/source-actor';
import { SqliteSourceSnapshots } from '../libs/engine/src/source-snapshots';
import { median } from './e2e.bench';

const SOURCE = 'dc_bench_load';
const definition: ComponentDefinition = {
  name: 'Echo', version: '1.0.0', type: 'source', hooks: [], methods: [], hasRun: true, props: [{ name: 'http', type: '$.interface.http' }],
};
const config: SourceConfig = { componentId: 'sc_echo', name: 'echo', nameSlug: 'echo', configuredProps: {}, active: true, endpointKey: 'k' };

/** The run of the e2e bench's echo source: one emit of the request body. */
function echo(event: unknown): SandboxResult {
  return { ok: true, logs: [], durationMs: 0, cpuMs: 0, dbWrites: [], emits: [{ event, meta: { summary: 'request POST' } }] };
}

/**
 * What the first request to a source costs after a restart, when the source has served `runs`
 * requests before: its actor folds the source's stream (or its snapshot and the events after it)
 * before it can decide anything. In process, on a real SQLite file; the history is written as the
 * actor would have recorded it (`decideSource`), the sandbox is replaced by the echo source's
 * result, so the figure is the load and one commit. `BENCH_LOAD_RUNS` (comma-separated) sets the
 * histories; 5 fresh actors per case, medians.
 */
export async function benchSourceLoad(log: (s: string) => void): Promise<void> {
  const histories = (process.env.BENCH_LOAD_RUNS ?? '10000,100000').split(',').map(Number);
  const trials = 5;
  for (const runs of histories) {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-load-'));
    const store = new SqliteEventStore<SluiceEvent>({ file: join(dir, 'sluice.db'), synchronous: 'normal' });
    try {
      const snapshots = new SqliteSourceSnapshots(store.db);
      const events = await writeHistory(store, runs);
      const actor = (withSnapshots: boolean, every?: number) => new SourceActor(SOURCE, {
        store, box: new SecretBox(randomBytes(32)), publicUrl: () => 'http://sluice.test', maxDbBytesPerSource: 8 << 20,
        component: () => ({ definition, bundle: '', codeHash: 'h' }), invoke: async (inv) => echo(inv.event),
        snapshots: withSnapshots ? snapshots : undefined, snapshotEvery: every,
      });
      const firstRun = async (withSnapshots: boolean) => {
        const a = actor(withSnapshots);
        const t0 = process.hrtime.bigint();
        await a.run('http', { n: 1 }, uuidv7());
        return Number(process.hrtime.bigint() - t0) / 1e6;
      };
      const without: number[] = [];
      for (let t = 0; t < trials; t++) without.push(await firstRun(false));
      // A snapshot at the head, as a source that ran on would have one within its last 10,000 events.
      await actor(true, 1).run('http', { n: 0 }, uuidv7());
      const snap = snapshots.get(SOURCE)!;
      const withSnap: number[] = [];
      for (let t = 0; t < trials; t++) withSnap.push(await firstRun(true));
      // What taking one costs the event loop: the state as JSON and its row.
      const state = initialSourceState(SOURCE);
      for (const [i, e] of (await store.readStream(Streams.source(SOURCE))).entries()) evolveSource(state, e as never, BigInt(i));
      const take: number[] = [];
      for (let t = 0; t < 11; t++) {
        const t0 = process.hrtime.bigint();
        snapshots.put(SOURCE, { revision: snap.revision, eventId: snap.eventId, state: JSON.stringify(sourceSnapshot(state)) });
        take.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      const w = median(without);
      const s = median(withSnap);
      log(`  ${runs.toLocaleString('en-US')} past requests (${events.toLocaleString('en-US')} events): first request ${w.toFixed(1)} ms folding the whole stream, `
        + `${s.toFixed(1)} ms from a snapshot (${(w / s).toFixed(1)}x); a snapshot is ${(snap.state.length / 1024).toFixed(0)} KiB and takes ${median(take).toFixed(2)} ms to write`);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** `runs` recorded runs of the echo source after its deploy, appended 1,000 runs at a time. */
async function writeHistory(store: SqliteEventStore<SluiceEvent>, runs: number): Promise<number> {
  const state = initialSourceState(SOURCE);
  let pending: NewSourceEvent[] = [];
  let written = 0;
  const take = (d: ReturnType<typeof decideSource>) => {
    if ('rejected' in d) throw new Error(d.rejected.message);
    for (const e of d.events) {
      evolveSource(state, e, BigInt(written + pending.length));
      pending.push(e);
    }
  };
  const flush = async () => {
    await store.append(Streams.source(SOURCE), pending.map((e) => ({ ...e, id: uuidv7() })), { expectedRevision: written === 0 ? 'no_stream' : BigInt(written - 1) });
    written += pending.length;
    pending = [];
  };
  take(decideSource(state, { type: 'deploy', accountId: 'u_bench', config }));
  take(decideSource(state, { type: 'finishTransition' }));
  for (let i = 0; i < runs; i++) {
    const requestId = uuidv7();
    const result: ExecutionResult = { ...echo({ n: i, body: 'x'.repeat(40) }) };
    let n = 0;
    take(decideSource(state, {
      type: 'recordRun', trigger: 'http', requestId, result, dedupe: undefined, runId: uuidv7(), newEmitId: () => `${requestId}/${n++}`, now: Date.now(),
    }));
    if ((i + 1) % 1000 === 0) await flush();
  }
  if (pending.length > 0) await flush();
  return written;
}
