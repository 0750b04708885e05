import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

const action = (name: string) => readFileSync(join(__dirname, 'fixtures', 'actions', `${name}.mjs`), 'utf8');

describe('POST /v1/actions/run (the action fixtures)', () => {
  let server: SluiceProcess;
  let c: ReturnType<typeof api>;

  beforeAll(async () => {
    server = await startSluice();
    c = api(server.url, server.apiKey);
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('runs a data transformation from code: ret, exports, summary and its console lines in os; a default on a required prop with a warning', async () => {
    const r = await c.post('/v1/actions/run', {
      component_code: action('transform-records'),
      configured_props: { records: [{ name: 'ada' }, { name: 'bob' }, { other: 1 }], field: 'name' },
    });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      ret: { values: ['ada', 'bob'], joined: 'ada,bob', base64: Buffer.from('ada,bob').toString('base64') },
      exports: { count: 2 },
      summary: 'Picked 2 name values',
      ok: true,
      sends: [],
    });
    expect(r.body.data.os).toEqual([{ k: 'console.log', ts: expect.any(Number), msg: 'picked 2 of 3' }]);
    expect(r.body.data.warnings).toEqual([{ field: 'props.separator.default', message: expect.stringContaining('not optional') }]);
    // The same code is saved once, and its warnings show wherever the component is shown.
    const saved = await c.get(`/v1/components/${r.body.data.component_id}`);
    expect(saved.body.data.warnings.map((w: { field: string }) => w.field)).toEqual(['props.separator.default']);
  });

  it('accepts props in the query string too (as the spec clients send them)', async () => {
    const saved = await c.post('/v1/components', { component_code: action('transform-records') });
    const r = await c.post('/v1/actions/run', undefined, {
      component_id: saved.body.data.id,
      configured_props: JSON.stringify({ records: [{ n: 1 }], field: 'n', separator: ';' }),
    });
    expect(r.status).toBe(200);
    expect(r.body.data.ret.joined).toBe('1');
  });

  it('returns the $.send.http of a run, validated and queued, not performed', async () => {
    const r = await c.post('/v1/actions/run', {
      component_code: action('send-http'),
      configured_props: { url: 'https://hooks.example.com/in', payload: { a: 1 } },
    });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ ok: true, ret: { queued: true }, summary: 'Queued a POST to hooks.example.com' });
    expect(r.body.data.sends).toEqual([
      { kind: 'http', params: { method: 'POST', url: 'https://hooks.example.com/in', headers: { 'x-sent-by': 'sluice-fixture' }, data: { a: 1 } } },
    ]);
    const bad = await c.post('/v1/actions/run', { component_code: action('send-http'), configured_props: { url: 'file:///etc/passwd' } });
    expect(bad.status).toBe(200);
    expect(bad.body.data.ok).toBe(false);
    expect(bad.body.data.sends).toEqual([]);
    expect(bad.body.data.os.at(-1)).toMatchObject({ k: 'error', err: { name: 'TypeError', message: expect.stringContaining('$.send.http: url must be an absolute http or https URL') } });
  });

  it('returns the custom response a run gave with $.respond', async () => {
    const r = await c.post('/v1/actions/run', { component_code: action('custom-response'), configured_props: { status: 202, message: 'accepted', immediate: true } });
    expect(r.status).toBe(200);
    expect(r.body.data.http_response).toEqual({
      status: 202, headers: { 'x-responded-by': 'sluice-fixture', 'content-type': 'application/json; charset=utf-8' }, body: '{"message":"accepted"}', immediate: true,
    });
    expect(r.body.data.ret).toEqual({ responded: 202 });
  });

  it('returns the reason of $.flow.exit and no return value', async () => {
    const r = await c.post('/v1/actions/run', { component_code: action('exit-early'), configured_props: { items: [] } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ ok: true, ret: null, flow_exit: { reason: 'no items to process' }, summary: 'Nothing to do' });
    const going = await c.post('/v1/actions/run', { component_code: action('exit-early'), configured_props: { items: [1, 2] } });
    expect(going.body.data).toMatchObject({ ok: true, ret: { processing: 2 } });
    expect(going.body.data.flow_exit).toBeUndefined();
  });

  it('answers a ConfigurationError with 400 configuration_error and its message, no stack; other errors in os with ok false', async () => {
    const refused = await c.post('/v1/actions/run', { component_code: action('configuration-check'), configured_props: { limit: 500 } });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: 'Limit must be at most 100, got 500', code: 'configuration_error' });
    const failed = await c.post('/v1/actions/run', { component_code: action('configuration-check'), configured_props: { limit: -1 } });
    expect(failed.status).toBe(200);
    expect(failed.body.data.ok).toBe(false);
    expect(failed.body.data.ret).toBeNull();
    expect(failed.body.data.os).toEqual([
      { k: 'error', ts: expect.any(Number), err: { name: 'RangeError', message: 'a negative limit reached the run', stack: expect.stringContaining('RangeError') } },
    ]);
    const fine = await c.post('/v1/actions/run', { component_code: action('configuration-check'), configured_props: { limit: 5 } });
    expect(fine.body.data).toMatchObject({ ok: true, ret: 5, summary: 'Limit is 5' });
  });

  it('validates props as for sources: missing, wrong type and unknown props are a 400 naming each', async () => {
    const r = await c.post('/v1/actions/run', { component_code: action('configuration-check'), configured_props: { limit: 'ten', nope: 1 } });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid_request');
    expect(r.body.details.fields).toEqual({ 'configured_props.limit': 'must be an integer', 'configured_props.nope': 'is not a prop of this component' });
    const missing = await c.post('/v1/actions/run', { component_code: action('transform-records'), configured_props: { field: 'x' } });
    expect(missing.status).toBe(400);
    expect(missing.body.details.fields).toEqual({ 'configured_props.records': 'is required' });
    const none = await c.post('/v1/actions/run', { configured_props: {} });
    expect(none.status).toBe(400);
    expect(Object.keys(none.body.details.fields)).toEqual(['component_id']);
  });

  it('runs a published action by key and by key@version; an unknown version is a 404', async () => {
    const v1 = action('configuration-check');
    const v2 = v1.replace('version: "0.1.0"', 'version: "0.2.0"').replace('`Limit is ${this.limit}`', '`Limit v2 is ${this.limit}`');
    expect((await c.post('/v1/components', { component_code: v1, publish: true })).status).toBe(200);
    expect((await c.post('/v1/components', { component_code: v2, publish: true })).status).toBe(200);
    const latest = await c.post('/v1/actions/run', { key: 'sluice-fixtures-configuration-check', configured_props: { limit: 1 } });
    expect(latest.body.data.summary).toBe('Limit v2 is 1');
    const pinned = await c.post('/v1/actions/run', { key: 'sluice-fixtures-configuration-check@0.1.0', configured_props: { limit: 1 } });
    expect(pinned.body.data.summary).toBe('Limit is 1');
    const unknown = await c.post('/v1/actions/run', { key: 'sluice-fixtures-configuration-check@9.9.9', configured_props: { limit: 1 } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.details.fields).toEqual({ key: 'not found' });
  });

  it('gives $.service.db a throwaway store (accepted with a warning), and refuses to run a source', async () => {
    const first = await c.post('/v1/actions/run', { component_code: action('db-counter') });
    const second = await c.post('/v1/actions/run', { component_code: action('db-counter') });
    expect([first.body.data.ret, second.body.data.ret]).toEqual([1, 1]);
    expect(first.body.data.warnings.map((w: { field: string }) => w.field)).toEqual(['props.db.type']);
    const source = await c.post('/v1/actions/run', { component_code: 'export default { name: "s", version: "1", run() {} }' });
    expect(source.status).toBe(400);
    expect(source.body.details.fields.component_id).toMatch(/only actions can be run/);
  });
});
