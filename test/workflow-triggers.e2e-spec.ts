import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { ECHO_SOURCE } from './support/fixtures';
import { DOUBLE_ACTION, SSE_ACTION } from './support/workflow-fixtures';

describe('issue 8: workflow timers, updates and the SSE channel', () => {
  let server: SluiceProcess;

  beforeAll(async () => {
    server = await startSluice();
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });
  const c = () => api(server.url, server.apiKey);

  it('a timer-triggered workflow runs on its interval with the timer event; deleting it stops it', async () => {
    const wf = (await c().post('/v1/workflows', {
      name: 'Ticker', trigger: { type: 'timer', interval_seconds: 1 }, steps: [{ name: 'double', component_code: DOUBLE_ACTION, configured_props: { n: 3 } }],
    })).body.data;
    expect(wf.trigger).toEqual({ type: 'timer', interval_seconds: 1 });
    const runs = await eventually(async () => {
      const data = (await c().get(`/v1/workflows/${wf.id}/runs`)).body.data as { status: string; trigger: { event: { interval_seconds: number } } }[];
      return data.filter((r) => r.status === 'succeeded').length >= 2 ? data : undefined;
    }, 15_000, 'two timer runs');
    expect(runs![0].trigger.event).toMatchObject({ interval_seconds: 1 });
    expect((await c().del(`/v1/workflows/${wf.id}`)).status).toBe(200);
    expect((await c().get(`/v1/workflows/${wf.id}/runs`)).status).toBe(404);
  });

  it('refuses a bad trigger, a step that is not an action and a duplicate step name, naming each field', async () => {
    const src = await c().post('/v1/workflows', { name: 'Bad', trigger: { type: 'timer', interval_seconds: 0 }, steps: [] });
    expect(src.status).toBe(400);
    expect(JSON.stringify(src.body)).toContain('trigger.interval_seconds');
    const notAction = await c().post('/v1/workflows', {
      name: 'Bad', trigger: { type: 'manual' },
      steps: [{ name: 'a', component_code: ECHO_SOURCE, configured_props: {} }, { name: 'a', component_code: DOUBLE_ACTION, configured_props: { n: 1 } }],
    });
    expect(notAction.status).toBe(400);
    expect(JSON.stringify(notAction.body)).toContain('steps[1].name');
    const source = await c().post('/v1/workflows', { name: 'Bad', trigger: { type: 'manual' }, steps: [{ name: 'a', component_code: ECHO_SOURCE, configured_props: {} }] });
    expect(source.status).toBe(400);
    expect(source.body.details.fields['steps[0]']).toContain('a step must be an action');
    const trigger = await c().post('/v1/workflows', { name: 'Bad', trigger: { type: 'emitter', emitter_id: 'dc_nope' }, steps: [] });
    expect(trigger.status).toBe(400);
    expect(JSON.stringify(trigger.body)).toContain('trigger.emitter_id');
  });

  it('PUT keeps the id and endpoint; runs started afterwards use the new version', async () => {
    const wf = (await c().post('/v1/workflows', {
      name: 'Versioned', trigger: { type: 'http' }, steps: [{ name: 'double', component_code: DOUBLE_ACTION, configured_props: { n: 1 } }],
    })).body.data;
    const put = await c().put(`/v1/workflows/${wf.id}`, { steps: [{ name: 'double', component_code: DOUBLE_ACTION, configured_props: { n: 7 } }] });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({ id: wf.id, version: 2, trigger: { endpoint_url: wf.trigger.endpoint_url } });
    const run = (await c().post(`/v1/workflows/${wf.id}/run`, { event: {} })).body.data;
    expect(run).toMatchObject({ workflow_version: 2, status: 'succeeded' });
    expect(run.steps[0].exports).toEqual({ doubled: 14 });
  });

  it('$.send.sse feeds GET /v1/workflows/{id}/sse?channel=', async () => {
    const wf = (await c().post('/v1/workflows', { name: 'Announcer', trigger: { type: 'manual' }, steps: [{ name: 'say', component_code: SSE_ACTION, configured_props: {} }] })).body.data;
    const ac = new AbortController();
    const res = await fetch(`${server.url}/v1/workflows/${wf.id}/sse?channel=news`, { headers: { authorization: `Bearer ${server.apiKey}` }, signal: ac.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    const read = (async () => {
      while (!text.includes('data:')) {
        const { value, done } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString('utf8');
      }
    })();
    await eventually(() => text.includes(': connected'), 5_000, 'the stream to open');
    await c().post(`/v1/workflows/${wf.id}/run`, { event: { msg: 'hello' } });
    await read;
    ac.abort();
    const data = JSON.parse(/data: (.*)\n/.exec(text)![1]);
    expect(data).toMatchObject({ channel: 'news', payload: { msg: 'hello' } });
  });
});
