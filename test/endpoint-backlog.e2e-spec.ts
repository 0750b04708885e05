import { RequestGate } from './support/request-gate';
import { api, eventually, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';
import { ECHO_SOURCE } from './support/fixtures';

/** A source whose run waits for a local gate before it emits: its requests wait to run while the gate is shut. */
const SLOW_SOURCE = `export default { name: "slow", version: "1", props: { http: { type: "$.interface.http" }, url: { type: "string" } },
  async run(e) { await fetch(this.url); this.$emit({ n: e.body.n }); } }`;

const BODY_BYTES = 300_000;
/** A JSON body of exactly BODY_BYTES bytes carrying `n`. */
function bigBody(n: number): string {
  const head = JSON.stringify({ n, pad: '' });
  return `${head.slice(0, -2)}${'x'.repeat(BODY_BYTES - head.length)}"}`;
}
const post = (url: string, body: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

/**
 * A source slower than its requests (issue 10): its endpoint holds at most
 * SLUICE_SOURCE_MAX_WAITING_RUNS requests, and the bodies of requests waiting to run are capped
 * per endpoint, per account and in all (SLUICE_MAX_QUEUED_BYTES_*); past a cap the endpoint answers
 * 429 naming it, the others stay open, and GET /v1/sources/{id} shows the backlog.
 */
describe('a source slower than its requests: its endpoint\'s backlog is capped in runs and in bytes', () => {
  let server: SluiceProcess;
  let keyBob: string;
  let gate: RequestGate;
  const alice = () => api(server.url, server.apiKey);

  beforeAll(async () => {
    const dir = newDataDir();
    const keyAlice = 'sk_alice_0123456789abcdef';
    await runAdmin(dir, ['create-account', '--name', 'alice', '--key', keyAlice]);
    keyBob = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'bob'])).api_key;
    server = await startSluice({
      dataDir: dir, apiKey: keyAlice,
      env: {
        SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1', SLUICE_SANDBOX_TIMEOUT_MS: '60000', SLUICE_SOURCE_MAX_WAITING_RUNS: '4',
        SLUICE_MAX_QUEUED_BYTES_PER_ENDPOINT: '1000000', SLUICE_MAX_QUEUED_BYTES_PER_ACCOUNT: '2500000',
      },
    });
  });
  beforeEach(async () => {
    gate = new RequestGate();
    await gate.start();
  });
  afterEach(() => gate.stop());
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  const slowSource = async (name: string) => (await alice().post('/v1/sources', { component_code: SLOW_SOURCE, name, configured_props: { url: gate.url } })).body.data;
  const backlogOf = async (id: string) => (await alice().get(`/v1/sources/${id}`)).body.data.backlog;
  const emitsOf = async (id: string) => (await alice().get(`/v1/sources/${id}/event_summaries`, { expand: 'event', limit: '100' })).body.data as { event: { n: number } }[];

  it('past SLUICE_SOURCE_MAX_WAITING_RUNS the source answers 429 naming it; its account\'s other source is open; once drained, every request ran once', async () => {
    const slow = await slowSource('slow runs');
    const echo = (await alice().post('/v1/sources', { component_code: ECHO_SOURCE, name: 'echo' })).body.data;
    for (let n = 1; n <= 4; n++) expect((await post(slow.endpoint_url, JSON.stringify({ n }))).status).toBe(200);
    await gate.waitForHits(1);
    const refused = await post(slow.endpoint_url, JSON.stringify({ n: 5 }));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual({ code: 'rate_limited', error: `source ${slow.id} has too many requests waiting to run; retry shortly` });
    expect(await backlogOf(slow.id)).toMatchObject({ runs_waiting: 4, full: true, max_runs_waiting: 4, emits_waiting: 0 });
    expect((await post(echo.endpoint_url, JSON.stringify({ n: 1 }))).status).toBe(200);

    gate.open();
    await eventually(async () => (await backlogOf(slow.id)).runs_waiting === 0, 20_000, 'the slow source drained');
    expect(await backlogOf(slow.id)).toMatchObject({ runs_waiting: 0, bytes_waiting: 0, full: false });
    expect((await post(slow.endpoint_url, JSON.stringify({ n: 6 }))).status).toBe(200);
    const emits = await eventually(async () => {
      const got = await emitsOf(slow.id);
      return got.length === 5 ? got : undefined;
    }, 20_000, 'five emits');
    expect(emits!.map((e) => e.event.n).sort()).toEqual([1, 2, 3, 4, 6]);
  });

  it('bodies waiting to run are capped per source and per account, on every way in; another account is not held up', async () => {
    const [a1, a2, a3] = [await slowSource('a1'), await slowSource('a2'), await slowSource('a3')];
    for (let n = 1; n <= 3; n++) expect((await post(a1.endpoint_url, bigBody(n))).status).toBe(200);
    // A fourth would hold 1.2 MB of a1's bodies, past its 1 MB.
    const perSource = await post(a1.endpoint_url, bigBody(4));
    expect(perSource.status).toBe(429);
    expect(((await perSource.json()) as { error: string }).error).toBe(`source ${a1.id} has too many request bytes waiting to run; retry shortly`);
    // The same through the routes behind the fast paths (a chunked body has no length up front).
    const chunked = await fetch(a1.endpoint_url, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: new Blob([bigBody(5)]).stream(), duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(429);
    expect(await backlogOf(a1.id)).toMatchObject({ runs_waiting: 3, bytes_waiting: 3 * BODY_BYTES, full: true, max_bytes_waiting: 1_000_000 });

    for (let n = 1; n <= 3; n++) expect((await post(a2.endpoint_url, bigBody(n))).status).toBe(200);
    for (let n = 1; n <= 2; n++) expect((await post(a3.endpoint_url, bigBody(n))).status).toBe(200);
    // Alice holds 2.4 MB: a third body for a3 (within its own 1 MB) passes her 2.5 MB.
    const perAccount = await post(a3.endpoint_url, bigBody(3));
    expect(perAccount.status).toBe(429);
    expect(((await perAccount.json()) as { error: string }).error).toBe('too many request bytes waiting to run for this account; retry shortly');
    expect(await backlogOf(a3.id)).toMatchObject({ runs_waiting: 2, bytes_waiting: 2 * BODY_BYTES, full: false });
    const bob = (await api(server.url, keyBob).post('/v1/sources', { component_code: ECHO_SOURCE, name: 'bob' })).body.data;
    expect((await post(bob.endpoint_url, bigBody(1))).status).toBe(200);

    gate.open();
    for (const s of [a1, a2, a3]) await eventually(async () => (await backlogOf(s.id)).runs_waiting === 0, 20_000, `${s.name} drained`);
    expect((await post(a3.endpoint_url, bigBody(3))).status).toBe(200);
    const emitted = await eventually(async () => {
      const got = [await emitsOf(a1.id), await emitsOf(a2.id), await emitsOf(a3.id)].map((l) => l.map((e) => e.event.n).sort());
      return got[2].length === 3 ? got : undefined;
    }, 20_000, 'a3\'s third emit');
    expect(emitted).toEqual([[1, 2, 3], [1, 2, 3], [1, 2, 3]]);
  });
});
