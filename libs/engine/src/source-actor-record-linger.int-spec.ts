import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ComponentDefinition, EventTypes, SecretBox, SluiceEvent, SourceConfig, Streams } from '@app/domain';
import { SqliteEventStore, uuidv7 } from '@app/event-store';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import { SourceActor } from './source-actor';
import { requestAppendOptions } from './use-cases/endpoint-use-cases';

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

  /** What the endpoint does for request `n`: starts its run, then appends the request with the endpoint's options. */
  function receiveApart(actor: SourceActor, n: number) {
    const requestId = uuidv7();
    const event = { method: 'POST', path: '/', url: 'http://sluice.test/e/k-linger', query: {}, headers: {}, bodyRaw: '', body: { n } };
    const { durable } = actor.start('http', event, requestId);
    const recorded = store.append(Streams.inbox(SOURCE), [{
      id: requestId, type: EventTypes.httpRequestReceived, data: { sourceId: SOURCE, requestId, ...event }, metadata: { actor: 'http' },
    }], requestAppendOptions(LINGER_MS, false));
    return { recorded, durable };
  }
  function receive(actor: SourceActor, n: number) {
    const { recorded, durable } = receiveApart(actor, n);
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

  it('a lone request is committed at once, durable before its run is back; the run\'s record then commits on its own', async () => {
    // Its run answers 150 ms after it was sent.
    const actor = await deployed(LINGER_MS, 150);
    // The deploy's own appends were the last arrivals: long enough ago, they set no pace.
    await new Promise((r) => setTimeout(r, 4 * LINGER_MS));
    const order: string[] = [];
    const { recorded, durable } = receiveApart(actor, 1);
    const started = Date.now();
    const [request] = await Promise.all([recorded.then((r) => { order.push('request durable'); return r; }), durable.then(() => order.push('run recorded'))]);
    // Neither waited for the 300 ms linger; the request did not wait for its run (it would have,
    // lingering for its record, as at busy rates).
    expect(order).toEqual(['request durable', 'run recorded']);
    expect(Date.now() - started).toBeLessThan(LINGER_MS - 10);
    expect(commits).toHaveLength(2);
    expect(commits[0]).toBe(request.position);
  });
});
