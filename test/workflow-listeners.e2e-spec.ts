import { join } from 'node:path';
import Database from 'better-sqlite3';
import { dispatchIdFor } from '@app/projections';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { WebhookReceiver } from './support/webhook-receiver';
import { ECHO_SOURCE } from './support/fixtures';
import { ADD_ONE_ACTION, DOUBLE_ACTION, EMIT_ACTION, FAILING_ACTION } from './support/workflow-fixtures';

/** An action that keeps a counter in its step's `$.service.db` and returns it. */
const COUNTING_ACTION = `
export default {
  name: "Count", key: "wf-count", version: "0.1.0", type: "action",
  props: { db: "$.service.db" },
  async run({ $, steps }) {
    const seen = (await this.db.get("seen")) || [];
    seen.push(steps.trigger.event.body.n);
    await this.db.set("seen", seen);
    return seen;
  },
};`;

describe('issue 8: workflows as listeners and emitters, $errors, trigger order and the step store', () => {
  let server: SluiceProcess;
  const receiver = new WebhookReceiver();

  beforeAll(async () => {
    await receiver.start();
    server = await startSluice();
  });
  afterAll(async () => {
    await server?.stop();
    await receiver.stop();
    if (server) removeDataDir(server.dataDir);
  });
  const c = () => api(server.url, server.apiKey);

  it('a source triggers a three-step workflow through a subscription; step 3\'s emit reaches a webhook subscribed to the workflow, signed, once', async () => {
    const src = (await c().post('/v1/sources', { component_code: ECHO_SOURCE, name: 'wf source' })).body.data;
    const wf = await c().post('/v1/workflows', {
      name: 'Listener', trigger: { type: 'emitter', emitter_id: src.id },
      steps: [
        { name: 'double', component_code: DOUBLE_ACTION, configured_props: { n: '{{steps.trigger.event.n}}' } },
        { name: 'add', component_code: ADD_ONE_ACTION, configured_props: { value: '{{steps.double.doubled}}' } },
        { name: 'emit', component_code: EMIT_ACTION, configured_props: { sum: '{{steps.add.$return_value}}', text: 'from {{steps.trigger.context.emitter_id}}' } },
      ],
    });
    expect(wf.status).toBe(200);
    const workflowId: string = wf.body.data.id;
    // The trigger is stored as a subscription with the workflow as listener.
    const subs = (await c().get('/v1/users/me/subscriptions')).body.data as { emitter_id: string; listener_id: string }[];
    expect(subs).toEqual(expect.arrayContaining([expect.objectContaining({ emitter_id: src.id, listener_id: workflowId })]));

    const wh = (await c().post('/v1/webhooks', { url: receiver.url, name: 'wf hook' })).body.data;
    receiver.secrets = [wh.signing_secret];
    expect((await c().post('/v1/subscriptions', { emitter_id: workflowId, listener_id: wh.id, event_name: 'results' })).status).toBe(200);

    expect((await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":5}' })).status).toBe(200);
    await eventually(() => receiver.received.length >= 1, 20_000, 'the workflow\'s emit at the webhook');
    const [got] = receiver.received;
    expect(got.verified).toBe(true);
    expect(got.json).toEqual({ sum: 11, text: `from ${src.id}` });
    expect(got.headers['x-pd-emitter-id']).toBe(workflowId);
    // The emit is delivered while the run records its end: wait for that.
    const run = await eventually(async () => {
      const [r] = (await c().get(`/v1/workflows/${workflowId}/runs`)).body.data;
      return r?.status !== 'running' ? r : undefined;
    }, 10_000, 'the run to end');
    expect(run).toMatchObject({ status: 'succeeded', trigger: { event: { n: 5 }, context: { emitter_id: src.id } } });
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.received).toHaveLength(1);
  });

  it('a failing step: the run is failed and the error reaches a webhook subscribed to the workflow\'s $errors', async () => {
    const wf = (await c().post('/v1/workflows', {
      name: 'Failing', trigger: { type: 'manual' }, steps: [{ name: 'boom', component_code: FAILING_ACTION, configured_props: {} }],
    })).body.data;
    const before = receiver.received.length;
    expect((await c().post('/v1/subscriptions', { emitter_id: wf.id, listener_id: (await c().get('/v1/users/me/webhooks')).body.data[0].id, event_name: '$errors' })).status).toBe(200);
    const run = (await c().post(`/v1/workflows/${wf.id}/run`, { event: {} })).body.data;
    expect(run.status).toBe('failed');
    await eventually(() => receiver.received.length > before, 20_000, 'the $errors event at the webhook');
    const got = receiver.received[before];
    expect(got.verified).toBe(true);
    expect(got.json).toMatchObject({ error: { name: 'TypeError', message: 'the input was not what I expected' }, workflow_id: wf.id, run_id: run.id, step: 'boom' });
  });

  it('runs of one workflow keep trigger order at concurrency 1, and a step\'s $.service.db persists across its runs', async () => {
    const wf = (await c().post('/v1/workflows', {
      name: 'Ordered', trigger: { type: 'http' }, steps: [{ name: 'count', component_code: COUNTING_ACTION, configured_props: {} }],
    })).body.data;
    const url = wf.trigger.endpoint_url.replace(/^.*\/e\//, `${server.url}/e/`);
    for (let n = 0; n < 6; n++) {
      expect((await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) })).status).toBe(200);
    }
    const runs = await eventually(async () => {
      const data = (await c().get(`/v1/workflows/${wf.id}/runs`, { limit: '10' })).body.data as { status: string; steps: { ret: number[] }[] }[];
      return data.length === 6 && data.every((r) => r.status === 'succeeded') ? data : undefined;
    }, 20_000, 'six runs');
    // Newest first: the last run saw every trigger, in the order they were sent.
    expect(runs![0].steps[0].ret).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('a listening workflow\'s run settles its dispatch by its start: no dispatch record of its own, nothing dispatched again after a restart', async () => {
    const src = (await c().post('/v1/sources', { component_code: ECHO_SOURCE, name: 'settling source' })).body.data;
    const wf = (await c().post('/v1/workflows', {
      name: 'Settling', trigger: { type: 'emitter', emitter_id: src.id },
      steps: [{ name: 'double', component_code: DOUBLE_ACTION, configured_props: { n: '{{steps.trigger.event.n}}' } }],
    })).body.data;
    for (const n of [1, 2, 3]) {
      expect((await fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) })).status).toBe(200);
    }
    const succeeded = async () => {
      const runs = (await c().get(`/v1/workflows/${wf.id}/runs`, { limit: '10' })).body.data as { id: string; status: string }[];
      return runs.length === 3 && runs.every((r) => r.status === 'succeeded') ? runs : undefined;
    };
    const runs = (await eventually(succeeded, 20_000, 'three runs'))!;
    await server.stop();

    const db = new Database(join(server.dataDir, 'sluice.db'), { readonly: true, fileMustExist: true });
    const starts = db.prepare("SELECT stream, data FROM events WHERE type = 'workflow.run_started.v1' AND stream IN (" + runs.map(() => '?').join(',') + ')')
      .all(...runs.map((r) => `workflowrun-${r.id}`)) as { stream: string; data: string }[];
    const dispatched = db.prepare("SELECT count(*) AS n FROM events WHERE type = 'listener.dispatched.v1' AND stream = ?").get(`listener-${wf.id}`) as { n: number };
    const pending = db.prepare('SELECT count(*) AS n FROM rm_listener_dispatches WHERE listener_id = ?').get(wf.id) as { n: number };
    db.close();
    // Each start names its dispatch, derived from the emit it heard, as the read model named it.
    expect(starts).toHaveLength(3);
    for (const row of starts) {
      const data = JSON.parse(row.data) as { dispatchId?: string; trigger: { context: { emit_id: string } } };
      expect(data.dispatchId).toBe(dispatchIdFor(data.trigger.context.emit_id, wf.id, true));
    }
    expect(dispatched.n).toBe(0);
    expect(pending.n).toBe(0);

    // After a restart nothing is pending, so nothing runs again.
    server = await startSluice({ dataDir: server.dataDir });
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await c().get(`/v1/workflows/${wf.id}/runs`, { limit: '10' })).body.data).toHaveLength(3);
  });
});
