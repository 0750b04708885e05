import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { ECHO_SOURCE } from './support/fixtures';

/** An action that asks a local server for permission before it returns (the gate below). */
const GATED_ACTION = `
export default {
  name: "Gated", key: "wf-gated", version: "0.1.0", type: "action",
  props: { url: { type: "string" } },
  async run({ steps }) {
    const res = await fetch(this.url);
    return { n: steps.trigger.event.n ?? (steps.trigger.event.body && steps.trigger.event.body.n), gate: await res.text() };
  },
};`;

/** Holds every request until `open()`, then answers them and every later one at once. */
class Gate {
  private server?: Server;
  private held: ServerResponse[] = [];
  private opened = false;
  /** Requests seen, and the most held at once. */
  seen = 0;
  maxHeld = 0;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((_req: IncomingMessage, res: ServerResponse) => {
      this.seen++;
      if (this.opened) return void res.end('open');
      this.held.push(res);
      this.maxHeld = Math.max(this.maxHeld, this.held.length);
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/gate`;
  }

  open(): void {
    this.opened = true;
    for (const res of this.held) res.end('open');
    this.held = [];
  }

  close(): void {
    this.open();
    this.server?.closeAllConnections();
    this.server?.close();
  }
}

/**
 * A workflow slower than its triggers (issue 10's next step after a lane's backlog held run ids):
 * with SLUICE_WORKFLOW_MAX_WAITING_RUNS at 4, a real server keeps at most 4 of its runs started,
 * the other emits waiting in the log, and its HTTP trigger answers 429 while its lane is full.
 */
describe('listeners slower than their triggers: a workflow\'s lane holds at most SLUICE_WORKFLOW_MAX_WAITING_RUNS runs, the rest waits in the log', () => {
  let server: SluiceProcess;
  let gate: Gate;
  const c = () => api(server.url, server.apiKey);

  beforeEach(async () => {
    gate = new Gate();
    await gate.start();
    server = await startSluice({
      env: { SLUICE_WORKFLOW_MAX_WAITING_RUNS: '4', SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1', SLUICE_SANDBOX_TIMEOUT_MS: '30000' },
    });
  });
  afterEach(async () => {
    gate.close();
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  const runsOf = async (workflowId: string) =>
    (await c().get(`/v1/workflows/${workflowId}/runs?limit=100`)).body.data as { id: string; status: string; trigger: { event: Record<string, unknown> }; steps: { ret: { n: number } }[] }[];

  it('emits past the limit wait in the log: 4 runs started while the step hangs, then every emit runs once, in order', async () => {
    const src = (await c().post('/v1/sources', { component_code: ECHO_SOURCE, name: 'fast source' })).body.data;
    const wf = (await c().post('/v1/workflows', {
      name: 'Slow listener', trigger: { type: 'emitter', emitter_id: src.id },
      steps: [{ name: 'gated', component_code: GATED_ACTION, configured_props: { url: gate.url } }],
    })).body.data;
    const n = 40;
    for (let i = 1; i <= n; i++) {
      const res = await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i }) });
      expect(res.status).toBe(200);
    }
    // The first run reaches the gate; the lane fills up to its limit and no further.
    await eventually(async () => gate.seen >= 1 && (await runsOf(wf.id)).length >= 4, 20_000, 'the lane at its limit');
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await runsOf(wf.id)).length).toBe(4);
    expect(gate.maxHeld).toBe(1); // concurrency 1: one run at the gate at a time
    // The workflow says what it has not run yet.
    expect((await c().get(`/v1/workflows/${wf.id}`)).body.data.backlog).toEqual({ runs_waiting: 4, emits_waiting: n - 4, full: true, max_runs_waiting: 4 });

    gate.open();
    const runs = await eventually(async () => {
      const all = await runsOf(wf.id);
      return all.length === n && all.every((r) => r.status === 'succeeded') ? all : undefined;
    }, 60_000, 'every emit run');
    // Newest first: each emit ran once, in the order the source emitted them.
    expect(runs!.map((r) => r.trigger.event.n).reverse()).toEqual([...Array(n).keys()].map((i) => i + 1));
    expect(runs!.map((r) => r.steps[0].ret.n).reverse()).toEqual([...Array(n).keys()].map((i) => i + 1));
    expect((await c().get(`/v1/workflows/${wf.id}`)).body.data.backlog).toEqual({ runs_waiting: 0, emits_waiting: 0, full: false, max_runs_waiting: 4 });
  });

  it('its HTTP trigger answers 429 with Retry-After while its lane is full, and takes requests again once it has drained', async () => {
    const wf = (await c().post('/v1/workflows', {
      name: 'Slow endpoint', trigger: { type: 'http' },
      steps: [{ name: 'gated', component_code: GATED_ACTION, configured_props: { url: gate.url } }],
    })).body.data;
    const post = (i: number) => fetch(wf.trigger.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i }) });
    for (let i = 1; i <= 4; i++) expect((await post(i)).status).toBe(200);
    const refused = await post(5);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ code: 'rate_limited', error: expect.stringContaining(wf.id) });
    // Run-now is refused the same way (its caller would wait behind the whole lane).
    const runNow = await fetch(`${server.url}/v1/workflows/${wf.id}/run`, {
      method: 'POST', headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' }, body: '{"event":{}}',
    });
    expect(runNow.status).toBe(429);
    expect(runNow.headers.get('retry-after')).toBe('1');
    expect(await runNow.json()).toMatchObject({ code: 'rate_limited', error: expect.stringContaining(wf.id) });
    // Another workflow of the same account is not held up by this one's lane.
    const other = (await c().post('/v1/workflows', {
      name: 'Other', trigger: { type: 'http' }, steps: [{ name: 'gated', component_code: GATED_ACTION, configured_props: { url: gate.url } }],
    })).body.data;
    expect((await fetch(other.trigger.endpoint_url, { method: 'POST', body: '{}' })).status).toBe(200);

    gate.open();
    await eventually(async () => (await runsOf(wf.id)).every((r) => r.status === 'succeeded'), 30_000, 'the runs to end');
    expect((await post(6)).status).toBe(200);
    const runs = await eventually(async () => {
      const all = await runsOf(wf.id);
      return all.length === 5 && all.every((r) => r.status === 'succeeded') ? all : undefined;
    }, 30_000, 'the sixth run');
    expect(runs!.map((r) => (r.trigger.event.body as { n: number }).n).reverse()).toEqual([1, 2, 3, 4, 6]);
  });

  it('a source listening to a source whose runs hang: its emits wait in the log, GET shows them, and each runs once when it frees up', async () => {
    const front = (await c().post('/v1/sources', { component_code: ECHO_SOURCE, name: 'front' })).body.data;
    const slowCode = `export default { name: "slow", version: "1", props: { url: { type: "string" } },
      async run(e) { await fetch(this.url); this.$emit({ got: e.n }); } }`;
    const slow = (await c().post('/v1/sources', { component_code: slowCode, name: 'slow', configured_props: { url: gate.url } })).body.data;
    expect((await c().post('/v1/subscriptions', { emitter_id: front.id, listener_id: slow.id })).status).toBe(200);
    const n = 40;
    for (let i = 1; i <= n; i++) {
      expect((await fetch(front.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: i }) })).status).toBe(200);
    }
    await eventually(async () => gate.seen >= 1, 20_000, 'the first run at the gate');
    expect((await c().get(`/v1/sources/${slow.id}`)).body.data.backlog).toEqual({ runs_waiting: 0, bytes_waiting: 0, full: false, max_runs_waiting: 1000, max_bytes_waiting: 8 * 1024 * 1024, emits_waiting: n });
    expect(gate.maxHeld).toBe(1);
    gate.open();
    await eventually(async () => (await c().get(`/v1/sources/${slow.id}`)).body.data.backlog.emits_waiting === 0, 30_000, 'every emit run');
    const events = (await c().get(`/v1/sources/${slow.id}/event_summaries`, { expand: 'event', limit: '100' })).body.data as { event: { got: number } }[];
    expect(events.map((x) => x.event.got).sort((a, b) => a - b)).toEqual([...Array(n).keys()].map((i) => i + 1));
  });
});
