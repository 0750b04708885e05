import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { ECHO_SOURCE } from './support/fixtures';
import { WebhookReceiver } from './support/webhook-receiver';

const WARM_UP = 300;
const MEASURED = 500;

/** POSTs `{ n }` for each n, `concurrency` at a time; every answer must be 200. */
async function postAll(endpoint: string, ns: number[], concurrency = 8): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < ns.length) {
      const n = ns[next++];
      const r = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
      expect(r.status).toBe(200);
      await r.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** The `map,...` lines of a V8 log (`--log-maps`) between the first transitions named `begin` and `end`. */
async function mapEventsBetween(log: string, begin: string, end: string): Promise<{ between: string[]; sawBegin: boolean; sawEnd: boolean }> {
  const between: string[] = [];
  let sawBegin = false;
  let sawEnd = false;
  for await (const line of createInterface({ input: createReadStream(log), crlfDelay: Infinity })) {
    if (!line.startsWith('map,')) continue;
    const name = line.slice(line.lastIndexOf(',') + 1);
    if (!sawBegin) {
      sawBegin = name === begin;
      continue;
    }
    if (name === end) {
      sawEnd = true;
      break;
    }
    between.push(line);
  }
  return { between, sawBegin, sawEnd };
}

/**
 * Every object the path from a request to its webhook delivery makes has a hidden class (a V8
 * map) V8 made before, once the server is warm. An object spread followed by a member the source
 * lacks (`{ ...e, id }`) gives every object made there a map of its own in V8 11, which made about
 * eight maps per event on this path (the events stamped by the actor, their metadata, the
 * invocation sent to the worker, the delivery job and its outcome): each a map in the old
 * generation, every site reading them megamorphic, and their young descriptor arrays kept alive by
 * dead maps until the next full collection (1 MB surviving each scavenge at 1,000 requests a
 * second, where 60 KB do without). The server runs with `--log-maps`; two requests whose bodies
 * have a member with a name of their own mark where the measured load begins and ends in the log
 * (parsing each body makes a transition named after it).
 */
describe('hidden classes on the request path', () => {
  let server: SluiceProcess | undefined;
  let receiver: WebhookReceiver | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'sluice-v8-log-'));

  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
    await receiver?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${MEASURED} requests delivered as signed webhooks make (almost) no new hidden class once warm`, async () => {
    const log = join(dir, 'v8.log');
    server = await startSluice({ nodeArgs: ['--log-maps', `--logfile=${log}`, '--no-logfile-per-isolate'] });
    receiver = new WebhookReceiver();
    await receiver.start();
    const c = api(server.url, server.apiKey);
    const wh = (await c.post('/v1/webhooks', { url: receiver.url, name: 'r', description: 'd' })).body.data;
    receiver.secrets = [wh.signing_secret];
    const src = (await c.post('/v1/sources', { component_code: ECHO_SOURCE })).body.data;
    expect((await c.post('/v1/subscriptions', { emitter_id: src.id, listener_id: wh.id })).status).toBe(200);

    const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
    await postAll(src.endpoint_url, range(1, WARM_UP));
    await eventually(() => receiver!.deliveredIds().length >= WARM_UP, 30_000, 'the warm-up delivered');

    const tag = Math.random().toString(36).slice(2, 10);
    const begin = `hidden_class_begin_${tag}`;
    const end = `hidden_class_end_${tag}`;
    const mark = async (name: string) => {
      const r = await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ [name]: 1 }) });
      expect(r.status).toBe(200);
    };
    await mark(begin);
    await postAll(src.endpoint_url, range(WARM_UP + 1, MEASURED));
    await eventually(() => receiver!.deliveredIds().length >= WARM_UP + 1 + MEASURED, 30_000, 'the measured requests delivered');
    await mark(end);
    await eventually(() => receiver!.deliveredIds().length >= WARM_UP + 2 + MEASURED, 30_000, 'the end mark delivered');
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    // V8 writes its log out at exit.
    await server.stop();

    const { between, sawBegin, sawEnd } = await mapEventsBetween(log, begin, end);
    expect(sawBegin).toBe(true);
    expect(sawEnd).toBe(true);
    const byKind = new Map<string, number>();
    for (const line of between) {
      const f = line.split(',');
      const key = `${f[1]} ${f[f.length - 1]}`;
      byKind.set(key, (byKind.get(key) ?? 0) + 1);
    }
    const kinds = [...byKind].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n} ${k}`);
    // Before the spreads went: about 4,000 here (8 per request). What is left is the odd late
    // transition of code warming up; one per ten requests would already be a site that makes a
    // map per event (or per few).
    if (between.length >= MEASURED / 10) throw new Error(`${between.length} maps made during ${MEASURED} requests; the most made: ${kinds.slice(0, 10).join('; ')}`);
    expect(between.length).toBeLessThan(MEASURED / 10);
  }, 120_000);
});
