import { ECHO_SOURCE } from './support/fixtures';
import { RequestGate } from './support/request-gate';
import { api, eventually, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';
import { WebhookReceiver } from './support/webhook-receiver';

// Keeps its secret token in module state and on globalThis, emits what it found there first, and
// reports module state in its name too (read when the code is saved). Both accounts deploy this text.
const STASHER = `let stash = null;
export default {
  get name() { return stash === null ? "Stasher" : "Stasher " + stash; },
  version: "0.1.0",
  props: { token: { type: "string", secret: true } },
  run() {
    this.$emit({ module: stash, global: globalThis.leaked ?? null });
    stash = this.token;
    globalThis.leaked = this.token;
  },
};`;

// Stays inside its run until the gate opens, then emits the request body.
const GATED_ECHO = `export default {
  name: "Gated echo",
  version: "0.1.0",
  props: { http: { type: "$.interface.http" }, gate: { type: "string" } },
  async run(event) {
    await (await fetch(this.gate)).text();
    this.$emit(event.body, { id: event.body.n, summary: "gated " + event.body.n });
  },
};`;

const BOMB = `export default {
  name: "Bomb",
  version: "0.1.0",
  props: { http: { type: "$.interface.http" } },
  run() { Array(1e9).fill(0); },
};`;

type RunLog = { kind: string; ok: boolean; error?: { name: string; message: string } };

describe('tenants sharing the sandbox', () => {
  let server: SluiceProcess;
  let keyB: string;
  const receiver = new WebhookReceiver();
  const gate = new RequestGate();

  beforeAll(async () => {
    const dir = newDataDir();
    await runAdmin(dir, ['create-account', '--name', 'alice', '--key', 'sk_alice_0123456789abcdef']);
    keyB = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'bob'])).api_key;
    // One worker: both accounts' sources share it. The gate is a loopback server the components fetch.
    server = await startSluice({ dataDir: dir, apiKey: 'sk_alice_0123456789abcdef', env: { SLUICE_SANDBOX_WORKERS: '1', SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1', SLUICE_SANDBOX_TIMEOUT_MS: '20000' } });
    await receiver.start();
    await gate.start();
  });
  afterAll(async () => {
    await server?.stop();
    await receiver.stop();
    await gate.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('the same code deployed by two accounts: B\'s run and B\'s save see nothing of A\'s secret in module state or globalThis', async () => {
    const a = api(server.url, server.apiKey);
    const b = api(server.url, keyB);
    const aliceToken = 'alice_token_do_not_leak_4242';
    const srcA = (await a.post('/v1/sources', { component_code: STASHER, configured_props: { token: aliceToken } })).body.data;
    const firstA = (await a.post(`/v1/sources/${srcA.id}/run`)).body.data;
    expect(firstA.emitted.map((e: { event: unknown }) => e.event)).toEqual([{ module: null, global: null }]);
    // A's own isolate stays warm: its second run sees what its first one stored (the probe works).
    const secondA = (await a.post(`/v1/sources/${srcA.id}/run`)).body.data;
    expect(secondA.emitted.map((e: { event: unknown }) => e.event)).toEqual([{ module: aliceToken, global: aliceToken }]);

    const created = await b.post('/v1/sources', { component_code: STASHER, configured_props: { token: 'bob_token' } });
    expect(created.status).toBe(200);
    const srcB = created.body.data;
    const compB = (await b.get(`/v1/components/${srcB.component_id}`)).body.data;
    expect(compB.name).toBe('Stasher');
    const runB = await b.post(`/v1/sources/${srcB.id}/run`);
    expect(runB.body.data.emitted.map((e: { event: unknown }) => e.event)).toEqual([{ module: null, global: null }]);
    expect(JSON.stringify([compB, runB.body, (await b.get(`/v1/sources/${srcB.id}/logs`)).body])).not.toContain(aliceToken);
  });

  it('A\'s source exhausting its worker\'s memory fails only A\'s run: every request B got a 200 for runs and is delivered', async () => {
    const a = api(server.url, server.apiKey);
    const b = api(server.url, keyB);
    const wh = (await b.post('/v1/webhooks', { url: receiver.url, name: 'bob hook' })).body.data;
    receiver.secrets = [wh.signing_secret];
    const gated = (await b.post('/v1/sources', { component_code: GATED_ECHO, configured_props: { gate: gate.url } })).body.data;
    const echo = (await b.post('/v1/sources', { component_code: ECHO_SOURCE })).body.data;
    for (const src of [gated, echo]) expect((await b.post('/v1/subscriptions', { emitter_id: src.id, listener_id: wh.id })).status).toBe(200);
    const bomb = (await a.post('/v1/sources', { component_code: BOMB })).body.data;

    const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const gatedAnswers = await Promise.all([0, 1, 2, 3, 4, 5].map((n) => post(gated.endpoint_url, { n })));
    expect(gatedAnswers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    // One of B's runs is inside its isolate now (the others queue behind it on the worker).
    await gate.waitForHits(1);
    const [bombAnswer, ...echoAnswers] = await Promise.all([post(bomb.endpoint_url, {}), ...[10, 11, 12, 13, 14, 15].map((n) => post(echo.endpoint_url, { n }))]);
    expect([bombAnswer, ...echoAnswers].map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200, 200]);

    const failed = (await eventually(async () => {
      const logs = (await a.get(`/v1/sources/${bomb.id}/logs`)).body.data as RunLog[];
      return logs.find((l) => l.kind === 'run');
    }, 30_000, 'the bomb\'s run to be recorded')) as RunLog;
    // B's run that was waiting at the (closed) gate when the worker died is re-run: it comes back to the gate.
    await gate.waitForHits(2);
    gate.open();

    expect(failed.ok).toBe(false);
    expect(failed.error).toMatchObject({ name: 'SandboxCrashError', message: expect.stringMatching(/exhausted the memory of its sandbox worker and took the worker down/) });
    const bombNow = (await a.get(`/v1/sources/${bomb.id}`)).body.data;
    expect(bombNow).toMatchObject({ failing: true, last_error: { name: 'SandboxCrashError', kind: 'crash' } });

    await eventually(() => receiver.deliveredIds().length >= 12, 30_000, '12 deliveries');
    const delivered = receiver.received.map((r) => (r.json as { n: number }).n).sort((x, y) => x - y);
    expect(delivered).toEqual([0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15]);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    // Six gated runs, plus the one that was inside the dead worker.
    expect(gate.hits).toBe(1 + 6);
    for (const src of [gated, echo]) {
      const runs = ((await b.get(`/v1/sources/${src.id}/logs`)).body.data as RunLog[]).filter((l) => l.kind === 'run');
      expect(runs.map((r) => r.ok)).toEqual([true, true, true, true, true, true]);
      expect((await b.get(`/v1/sources/${src.id}`)).body.data).toMatchObject({ failing: false, last_error: null });
    }
  });
});
