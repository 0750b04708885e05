import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { ADD_ONE_ACTION, DOUBLE_ACTION, EMIT_ACTION, EXIT_ACTION, FAILING_ACTION, RESPOND_ACTION } from './support/workflow-fixtures';

/** A local HTTP target: counts requests per path; `/gate` is held open while `holdGate` is set. */
class Target {
  readonly counts = new Map<string, number>();
  holdGate = false;
  gateHeld = 0;
  private server?: Server;
  private held: ServerResponse[] = [];

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      req.on('end', () => {
        const path = req.url ?? '/';
        this.counts.set(path, (this.counts.get(path) ?? 0) + 1);
        if (path === '/gate' && this.holdGate) {
          this.gateHeld++;
          this.held.push(res);
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}${path}`;
  }

  async stop(): Promise<void> {
    for (const res of this.held) res.destroy();
    await new Promise((r) => this.server?.close(r));
  }
}

// Normal locking: the tests read the live log through their own connection.
const ENV = { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1', SLUICE_SQLITE_LOCKING: 'normal' };

describe('issue 8: workflows, their runs as events, and the runner side of $', () => {
  let server: SluiceProcess;
  const target = new Target();

  beforeAll(async () => {
    await target.start();
    server = await startSluice({ env: ENV });
  });
  afterAll(async () => {
    await server?.stop();
    await target.stop();
    if (server) removeDataDir(server.dataDir);
  });

  const client = () => api(server.url, server.apiKey);
  const workflow = async (body: Record<string, unknown>) => {
    const r = await client().post('/v1/workflows', body);
    expect(r.status).toBe(200);
    return r.body.data as { id: string; name_slug: string; trigger: { endpoint_url?: string } };
  };
  const runOf = async (workflowId: string, runId: string) => (await client().get(`/v1/workflows/${workflowId}/runs/${runId}`)).body.data;

  it('a three-step workflow: step 2 uses step 1\'s export, step 3 emits, and the run records every step and the emit', async () => {
    const wf = await workflow({
      name: 'Three steps',
      trigger: { type: 'manual' },
      steps: [
        { name: 'double', component_code: DOUBLE_ACTION, configured_props: { n: '{{steps.trigger.event.n}}' } },
        { name: 'add', component_code: ADD_ONE_ACTION, configured_props: { value: '{{steps.double.doubled}}' } },
        { name: 'emit', component_code: EMIT_ACTION, configured_props: { sum: '{{steps.add.$return_value}}', text: 'n was {{steps.double.$return_value.n}}' } },
      ],
    });
    expect(wf.id).toMatch(/^p_/);
    expect((await client().get(`/v1/workflows/${wf.name_slug}`)).body.data.id).toBe(wf.id);
    const listed = await client().get('/v1/users/me/workflows');
    expect(listed.body.data.map((w: { id: string }) => w.id)).toContain(wf.id);

    const r = await client().post(`/v1/workflows/${wf.id}/run`, { event: { n: 20 } });
    expect(r.status).toBe(200);
    const run = r.body.data;
    expect(run).toMatchObject({ status: 'succeeded', workflow_version: 1, trigger: { event: { n: 20 } } });
    expect(run.id).toMatch(/^run_/);
    expect(run.steps.map((s: { name: string; status: string }) => [s.name, s.status])).toEqual([['double', 'succeeded'], ['add', 'succeeded'], ['emit', 'succeeded']]);
    expect(run.steps[0]).toMatchObject({ ret: { n: 20 }, exports: { doubled: 40 }, summary: 'doubled 20' });
    expect(run.steps[1]).toMatchObject({ ret: 41, exports: { sum: 41 } });
    expect(run.steps[2].sends).toEqual([expect.objectContaining({ kind: 'emit', ok: true })]);
    expect(typeof run.steps[0].duration_ms).toBe('number');

    // The emit is in the log as workflow.event_emitted.v1 on the run's stream, channel "results".
    const db = new Database(join(server.dataDir, 'sluice.db'), { readonly: true });
    const emitted = db.prepare("SELECT data FROM events WHERE type = 'workflow.event_emitted.v1' AND stream = ?").all(`workflowrun-${run.id}`) as { data: string }[];
    db.close();
    expect(emitted.map((e) => JSON.parse(e.data))).toEqual([expect.objectContaining({
      workflowId: wf.id, runId: run.id, event: { sum: 41, text: 'n was 20' }, meta: expect.objectContaining({ name: 'results' }),
    })]);

    const runs = await client().get(`/v1/workflows/${wf.id}/runs`);
    expect(runs.body.data.map((x: { id: string }) => x.id)).toEqual([run.id]);
  });

  it('runs and their emits carry their time: later runs\' ids sort after earlier ones, and each emit id starts with its run\'s trigger time', async () => {
    const wf = await workflow({
      name: 'Ordered ids', trigger: { type: 'manual' },
      steps: [{ name: 'emit', component_code: EMIT_ACTION, configured_props: { sum: 1, text: 'x' } }],
    });
    const runIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await client().post(`/v1/workflows/${wf.id}/run`, { event: { i } });
      expect(r.body.data.status).toBe('succeeded');
      runIds.push(r.body.data.id);
      await new Promise((res) => setTimeout(res, 3));
    }
    expect(runIds.every((id) => /^run_[0-9A-Za-z]{22}$/.test(id))).toBe(true);
    expect([...runIds].sort()).toEqual(runIds);
    const db = new Database(join(server.dataDir, 'sluice.db'), { readonly: true });
    try {
      for (const runId of runIds) {
        const records = db.prepare('SELECT type, data FROM events WHERE stream = ? ORDER BY revision').all(`workflowrun-${runId}`) as { type: string; data: string }[];
        const started = JSON.parse(records.find((e) => e.type === 'workflow.run_started.v1')!.data);
        const emit = JSON.parse(records.find((e) => e.type === 'workflow.event_emitted.v1')!.data);
        const ts = started.trigger.context.ts as number;
        expect(emit.deliveryIds).toBe('ordered');
        expect(emit.emitId.replace(/-/g, '').slice(0, 12)).toBe(ts.toString(16).padStart(12, '0'));
        expect(emit.emitId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      }
    } finally {
      db.close();
    }
  });

  it('refuses a reference to a later or unknown step at save, naming the field', async () => {
    const r = await client().post('/v1/workflows', {
      name: 'Bad ref', trigger: { type: 'manual' },
      steps: [
        { name: 'first', component_code: ADD_ONE_ACTION, configured_props: { value: '{{steps.second.$return_value}}' } },
        { name: 'second', component_code: ADD_ONE_ACTION, configured_props: { value: 1 } },
      ],
    });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain('steps[0].configured_props.value');
  });

  it('an HTTP-triggered workflow answers its caller with the $.respond of its second step; the run goes on', async () => {
    const wf = await workflow({
      name: 'Responder', trigger: { type: 'http', custom_response: true },
      steps: [
        { name: 'double', component_code: DOUBLE_ACTION, configured_props: { n: 2 } },
        { name: 'respond', component_code: RESPOND_ACTION, configured_props: { greeting: 'hello' } },
        { name: 'after', component_code: ADD_ONE_ACTION, configured_props: { value: '{{steps.double.doubled}}' } },
      ],
    });
    expect(wf.trigger.endpoint_url).toMatch(/\/e\/[A-Za-z0-9_-]+$/);
    const key = wf.trigger.endpoint_url!.split('/e/')[1];
    const res = await fetch(`${server.url}/e/${key}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Ada"}' });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-step')).toBe('respond');
    expect(await res.json()).toEqual({ greeting: 'hello', name: 'Ada' });
    const [run] = await eventually(async () => {
      const runs = (await client().get(`/v1/workflows/${wf.id}/runs`)).body.data;
      return runs.length === 1 && runs[0].status === 'succeeded' ? runs : undefined;
    }, 20_000, 'the run to finish');
    expect(run.steps[2]).toMatchObject({ status: 'succeeded', ret: 5 });
  });

  it('a custom-response workflow that never responds answers 502 no_response', async () => {
    const wf = await workflow({
      name: 'Silent', trigger: { type: 'http', custom_response: true },
      steps: [{ name: 'double', component_code: DOUBLE_ACTION, configured_props: { n: 1 } }],
    });
    const res = await fetch(wf.trigger.endpoint_url!.replace(/^.*\/e\//, `${server.url}/e/`), { method: 'POST', body: 'x' });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ code: 'no_response' });
  });

  it('an HTTP workflow without custom response answers 200 once the run is recorded; 404 once it is inactive', async () => {
    const wf = await workflow({ name: 'Plain', trigger: { type: 'http' }, steps: [{ name: 'double', component_code: DOUBLE_ACTION, configured_props: { n: 1 } }] });
    const url = wf.trigger.endpoint_url!.replace(/^.*\/e\//, `${server.url}/e/`);
    const ok = await fetch(url, { method: 'POST', body: 'x' });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { run_id: string }).run_id).toMatch(/^run_/);
    expect((await client().put(`/v1/workflows/${wf.id}`, { active: false })).status).toBe(200);
    expect((await fetch(url, { method: 'POST', body: 'x' })).status).toBe(404);
  });

  it('$.flow.exit in step 1 ends the run exited with its reason; steps 2 and 3 are skipped', async () => {
    const wf = await workflow({
      name: 'Exits', trigger: { type: 'manual' },
      steps: [
        { name: 'stop', component_code: EXIT_ACTION, configured_props: {} },
        { name: 'two', component_code: DOUBLE_ACTION, configured_props: { n: 1, counter_url: target.url('/exit-two') } },
        { name: 'three', component_code: DOUBLE_ACTION, configured_props: { n: 1, counter_url: target.url('/exit-three') } },
      ],
    });
    const run = (await client().post(`/v1/workflows/${wf.id}/run`, { event: {} })).body.data;
    expect(run).toMatchObject({ status: 'exited', exit_reason: 'nothing to do today' });
    expect(run.steps.map((s: { status: string }) => s.status)).toEqual(['succeeded', 'skipped', 'skipped']);
    expect(target.counts.get('/exit-two')).toBeUndefined();
  });

  it('a failing step fails the run with its error, skips the rest, and emits on $errors', async () => {
    const wf = await workflow({
      name: 'Fails', trigger: { type: 'manual' },
      steps: [
        { name: 'boom', component_code: FAILING_ACTION, configured_props: {} },
        { name: 'never', component_code: DOUBLE_ACTION, configured_props: { n: 1 } },
      ],
    });
    const run = (await client().post(`/v1/workflows/${wf.id}/run`, { event: {} })).body.data;
    expect(run.status).toBe('failed');
    expect(run.steps[0]).toMatchObject({ status: 'failed', error: { name: 'TypeError', message: 'the input was not what I expected' } });
    expect(run.steps[1].status).toBe('skipped');
    const db = new Database(join(server.dataDir, 'sluice.db'), { readonly: true });
    const emitted = db.prepare("SELECT data FROM events WHERE type = 'workflow.event_emitted.v1' AND stream = ?").all(`workflowrun-${run.id}`) as { data: string }[];
    db.close();
    expect(emitted.map((e) => JSON.parse(e.data))).toEqual([expect.objectContaining({
      meta: expect.objectContaining({ name: '$errors' }), deliveryIds: 'ordered',
      event: { error: expect.objectContaining({ name: 'TypeError' }), workflow_id: wf.id, run_id: run.id, step: 'boom' },
    })]);
  });

  it('SIGKILL during step 2: after restart the run finishes and step 1 (and its $.send.http) did not run again', async () => {
    const wf = await workflow({
      name: 'Crashes', trigger: { type: 'http' },
      steps: [
        { name: 'double', component_code: DOUBLE_ACTION, configured_props: { n: 4, counter_url: target.url('/crash-step-1') } },
        { name: 'add', component_code: ADD_ONE_ACTION, configured_props: { value: '{{steps.double.doubled}}', gate_url: target.url('/gate') } },
      ],
    });
    target.holdGate = true;
    const res = await fetch(wf.trigger.endpoint_url!.replace(/^.*\/e\//, `${server.url}/e/`), { method: 'POST', body: 'go' });
    expect(res.status).toBe(200);
    const { run_id: runId } = (await res.json()) as { run_id: string };
    await eventually(() => target.gateHeld > 0, 20_000, 'step 2 to reach the gate');
    expect(target.counts.get('/crash-step-1')).toBe(1);
    await server.kill();

    target.holdGate = false;
    server = await startSluice({ dataDir: server.dataDir, env: ENV });
    const run = await eventually(async () => {
      const r = await runOf(wf.id, runId);
      return r?.status === 'succeeded' ? r : undefined;
    }, 30_000, 'the resumed run to finish');
    expect(run.steps.map((s: { status: string }) => s.status)).toEqual(['succeeded', 'succeeded']);
    expect(run.steps[1]).toMatchObject({ ret: 9 });
    expect(target.counts.get('/crash-step-1')).toBe(1);
  });

  it('deletes a workflow: gone from reads, its endpoint answers 404', async () => {
    const wf = await workflow({ name: 'Doomed', trigger: { type: 'http' }, steps: [{ name: 'double', component_code: DOUBLE_ACTION, configured_props: { n: 1 } }] });
    expect((await client().del(`/v1/workflows/${wf.id}`)).status).toBe(200);
    expect((await client().get(`/v1/workflows/${wf.id}`)).status).toBe(404);
    expect((await fetch(wf.trigger.endpoint_url!.replace(/^.*\/e\//, `${server.url}/e/`), { method: 'POST', body: 'x' })).status).toBe(404);
  });
});
