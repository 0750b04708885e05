import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentDefinition, EventTypes, SecretBox, SluiceEvent, SourceConfig, Streams } from '@app/domain';
import { SqliteEventStore, uuidv7 } from '@app/event-store';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import { SourceActor } from './source-actor';

/**
 * The record of a run that served a durable request (acknowledged at its commit) lingers to share
 * a commit with the next requests and their records while requests arrive fast, and is written at
 * once otherwise (`recordLingerMs`, `AppendOptions.lingerOnlyWhenBusy`). Real SQLite store, the
 * requests recorded as the endpoint records them (the run started first, then the request appended
 * with its linger); the sandbox is a function whose answers come back a few ms apart.
 */
describe('SourceActor: the record of a request\'s run shares a commit at busy rates', () => {
  const SOURCE = 'dc_linger';
  const LINGER_MS = 300;
  const definition: ComponentDefinition = {
    name: 'Echo', version: '1.0.0', type: 'source', dedupe: undefined, hooks: [], methods: [], hasRun: true,
    props: [{ name: 'http', type: '$.interface.http' }],
  };
  const config: SourceConfig = { componentId: 'sc_echo', name: 'echo', nameSlug: 'echo', configuredProps: {}, active: true, endpointKey: 'k-linger' };
  let dir: string;
  let store: SqliteEventStore<SluiceEvent>;
  /** Head positions after each commit that appended events (one per group commit). */
  let commits: bigint[];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-record-linger-'));
    store = new SqliteEventStore<SluiceEvent>({ file: join(dir, 'sluice.db'), synchronous: 'full', locking: 'exclusive' });
    commits = [];
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A deployed actor whose run of request `n` answers `n * apartMs` ms after it was sent. */
  async function deployed(recordLingerMs: number, apartMs = 3): Promise<SourceActor> {
    const actor = new SourceActor(SOURCE, {
      store, box: new SecretBox(randomBytes(32)), publicUrl: () => 'http://sluice.test', maxDbBytesPerSource: 1024 * 1024,
      component: () => ({ definition, bundle: '', codeHash: 'h' }),
      invoke: async (inv: SandboxInvocation): Promise<SandboxResult> => {
        const n = (inv.event as { body?: { n?: number } } | undefined)?.body?.n ?? 0;
        await new Promise((r) => setTimeout(r, n * apartMs));
        return { ok: true, logs: [], durationMs: 0, cpuMs: 0, emits: [{ event: { n }, meta: {} }], dbWrites: [] };
      },
      recordLingerMs,
    });
    await actor.deploy('u_1', config, 'u_1');
    store.onAppended((head) => commits.push(head));
    return actor;
  }

  /** What the endpoint does for request `n`: starts its run, then appends the request with its linger. */
  function receive(actor: SourceActor, n: number) {
    const requestId = uuidv7();
    const event = { method: 'POST', path: '/', url: 'http://sluice.test/e/k-linger', query: {}, headers: {}, bodyRaw: '', body: { n } };
    const { durable } = actor.start('http', event, requestId);
    const recorded = store.append(Streams.inbox(SOURCE), [{
      id: requestId, type: EventTypes.httpRequestReceived, data: { sourceId: SOURCE, requestId, ...event }, metadata: { actor: 'http' },
    }], { lingerMs: LINGER_MS });
    return Promise.all([recorded, durable]);
  }

  it('a burst of requests and the records of their runs, answered 3 ms apart, share one or two commits', async () => {
    const actor = await deployed(LINGER_MS);
    await Promise.all([1, 2, 3, 4, 5, 6].map((n) => receive(actor, n)));
    // 6 requests, and 6 runs with one emit each.
    const log = await store.readAll();
    expect(log.filter((e) => e.type === EventTypes.httpRequestReceived)).toHaveLength(6);
    expect(log.filter((e) => e.type === EventTypes.sourceEventEmitted)).toHaveLength(6);
    expect(commits.length).toBeLessThanOrEqual(2);
  });

  it('without a record linger, each record is written as soon as its run is back: a commit each', async () => {
    // Answers 30 ms apart, longer than an fsync takes even on a loaded machine: at 3 ms apart a
    // commit waiting for a slow fsync took the next record with it (2 commits in one CI run).
    const actor = await deployed(0, 30);
    await Promise.all([1, 2, 3, 4, 5, 6].map((n) => receive(actor, n)));
    expect((await store.readAll()).filter((e) => e.type === EventTypes.sourceEventEmitted)).toHaveLength(6);
    expect(commits.length).toBeGreaterThanOrEqual(5);
  });

  it('a lone request: its run\'s record does not wait for the linger, and takes the request with it', async () => {
    const actor = await deployed(LINGER_MS);
    // The deploy's own appends were the last arrivals: long enough ago, they set no pace.
    await new Promise((r) => setTimeout(r, 4 * LINGER_MS));
    const started = Date.now();
    await receive(actor, 1);
    // The request and the record would each linger 300 ms; both were written when the run came back (3 ms).
    expect(Date.now() - started).toBeLessThan(LINGER_MS - 10);
    expect(commits).toHaveLength(1);
  });
});
