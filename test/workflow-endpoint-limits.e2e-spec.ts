import { execFile } from 'node:child_process';
import { createServer, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { api, eventually, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';
import { ADD_ONE_ACTION, DOUBLE_ACTION } from './support/workflow-fixtures';

const CLI = resolve(__dirname, '..', 'dist', 'apps', 'cli', 'main.js');

/** A loopback URL that does not answer until released: a step that fetches it stays mid-run. */
class Gate {
  held: ServerResponse[] = [];
  private server?: Server;
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      req.resume();
      this.held.push(res);
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
  }
  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/gate`;
  }
  release(): void {
    for (const res of this.held.splice(0)) res.writeHead(200).end('{}');
  }
  async stop(): Promise<void> {
    for (const res of this.held.splice(0)) res.destroy();
    await new Promise((r) => this.server?.close(r));
  }
}

/**
 * An HTTP-triggered workflow counts against the server's cap of waiting runs like a source's
 * requests: a flood gets 429 with Retry-After instead of an unbounded backlog, and requests are
 * accepted again once runs end. `pd workflows` and `pd runs` read the workflow and its runs back.
 */
describe('workflow endpoints: the cap of waiting runs; pd workflows / pd runs', () => {
  let server: SluiceProcess;
  const gate = new Gate();

  beforeAll(async () => {
    await gate.start();
    // Runs wait at the gate until it is released, not until a sandbox timeout (2 s in tests) ends them.
    server = await startSluice({ env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1', SLUICE_MAX_QUEUED_RUNS: '2', SLUICE_SANDBOX_TIMEOUT_MS: '60000' } });
  });
  afterAll(async () => {
    await server?.stop();
    await gate.stop();
    if (server) removeDataDir(server.dataDir);
  });

  const pd = async (...args: string[]) => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--no-warnings=ExperimentalWarning', CLI, ...args, '--json'], {
      env: { ...process.env, SLUICE_URL: server.url, SLUICE_API_KEY: server.apiKey },
    });
    return JSON.parse(stdout);
  };

  it('answers 429 while 2 runs wait, accepts again once they end; pd lists the workflow and its runs', async () => {
    const client = api(server.url, server.apiKey);
    const created = await client.post('/v1/workflows', {
      name: 'Gated',
      trigger: { type: 'http' },
      steps: [
        { name: 'wait', component_code: ADD_ONE_ACTION, configured_props: { value: '{{steps.trigger.event.body.n}}', gate_url: gate.url } },
        { name: 'double', component_code: DOUBLE_ACTION, configured_props: { n: '{{steps.wait.$return_value}}' } },
      ],
    });
    expect(created.status).toBe(200);
    const wf = created.body.data as { id: string; trigger: { endpoint_url: string } };
    const post = (n: number) => fetch(wf.trigger.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });

    expect((await post(1)).status).toBe(200);
    expect((await post(2)).status).toBe(200);
    // The first run is at the gate (concurrency 1: the second waits behind it): 2 runs are waiting.
    await eventually(() => gate.held.length === 1, 20_000, 'a run at the gate');
    const refused = await post(3);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ code: 'rate_limited' });

    // Both waiting runs end once the gate answers; then a new request is accepted again.
    gate.release();
    await eventually(() => gate.held.length === 1, 20_000, 'a run at the gate');
    gate.release();
    const ended = await eventually(async () => {
      const runs = (await client.get(`/v1/workflows/${wf.id}/runs`)).body.data as { status: string }[];
      return runs.every((r) => r.status !== 'running') ? runs : undefined;
    }, 20_000, 'both runs ended');
    expect(ended!.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    expect((await post(4)).status).toBe(200);
    await eventually(() => gate.held.length === 1, 20_000, 'a run at the gate');
    gate.release();

    const listed = await pd('workflows');
    // `--json` prints the API's objects as they are.
    expect(listed).toContainEqual(expect.objectContaining({
      id: wf.id, name: 'Gated', steps: [expect.objectContaining({ name: 'wait' }), expect.objectContaining({ name: 'double' })], trigger: expect.objectContaining({ type: 'http' }),
    }));
    const runs = await eventually(async () => {
      const listedRuns = (await pd('runs', wf.id, '-n', '5')) as { status: string }[];
      return listedRuns.length === 3 && listedRuns.every((r) => r.status !== 'running') ? listedRuns : undefined;
    }, 20_000, 'three ended runs');
    expect(runs!.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect((runs![0] as unknown as { steps: unknown[] }).steps).toEqual([
      expect.objectContaining({ name: 'wait', status: 'succeeded' }),
      expect.objectContaining({ name: 'double', status: 'succeeded' }),
    ]);
  });
});

/** One account's flood of waiting runs leaves the other accounts' endpoints open. */
describe('the cap of waiting runs per account', () => {
  let server: SluiceProcess;
  let keyB: string;
  const gate = new Gate();

  beforeAll(async () => {
    await gate.start();
    const dir = newDataDir();
    const keyA = 'sk_alice_0123456789abcdef';
    await runAdmin(dir, ['create-account', '--name', 'alice', '--key', keyA]);
    keyB = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'bob'])).api_key;
    server = await startSluice({
      dataDir: dir, apiKey: keyA,
      env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1', SLUICE_MAX_QUEUED_RUNS_PER_ACCOUNT: '2', SLUICE_SANDBOX_TIMEOUT_MS: '60000' },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await gate.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('A gets 429 with 2 runs waiting while B\'s source endpoint still accepts', async () => {
    const created = await api(server.url, server.apiKey).post('/v1/workflows', {
      name: 'Gated',
      trigger: { type: 'http' },
      steps: [{ name: 'wait', component_code: ADD_ONE_ACTION, configured_props: { value: 1, gate_url: gate.url } }],
    });
    expect(created.status).toBe(200);
    const endpointA = created.body.data.trigger.endpoint_url as string;
    const deployed = await api(server.url, keyB).post('/v1/sources', {
      component_code: 'export default { name: "b", version: "1", props: { http: "$.interface.http" }, run(e) { this.$emit(e.body); } }',
    });
    expect(deployed.status).toBe(200);
    const endpointB = deployed.body.data.endpoint_url as string;
    const post = (url: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });

    expect((await post(endpointA)).status).toBe(200);
    expect((await post(endpointA)).status).toBe(200);
    await eventually(() => gate.held.length === 1, 20_000, 'A\'s first run at the gate');
    expect((await post(endpointA)).status).toBe(429);
    // B has its own 2: its requests are taken while A's are refused.
    for (let i = 0; i < 2; i++) expect((await post(endpointB)).status).toBe(200);
    gate.release();
    await eventually(() => gate.held.length === 1, 20_000, 'A\'s second run at the gate');
    gate.release();
  });
});
