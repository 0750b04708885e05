import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

const fixture = (name: string) => readFileSync(join(__dirname, 'fixtures', 'components', `${name}.mjs`), 'utf8');

/** Posts JSON to a source endpoint. */
async function hit(endpoint: string, body: unknown, path = '', query = '') {
  return fetch(`${endpoint}${path}${query}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

describe('registry-style components deployed through the REST API', () => {
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

  async function restart() {
    await server.stop();
    server = await startSluice({ dataDir: server.dataDir });
    c = api(server.url, server.apiKey);
  }

  const events = async (id: string, n: number, channel?: string) => eventually(async () => {
    const r = await c.get(`/v1/sources/${id}/event_summaries`, { expand: 'event', limit: '100', ...(channel !== undefined ? { event_name: channel } : {}) });
    return r.body.data.length >= n ? r.body.data : undefined;
  }, 15_000, `${n} events of ${id}`);
  /** The endpoint of a source after restarts (the port changes between test servers). */
  const endpoint = async (id: string) => (await c.get(`/v1/sources/${id}`)).body.data.endpoint_url as string;

  it('custom responses: status, headers and JSON body from respond(); errors as 5xx', async () => {
    const comp = await c.post('/v1/components', { component_code: fixture('custom-response-receiver') });
    expect(comp.status).toBe(200);
    expect(comp.body.data).toMatchObject({ key: 'sluice-custom-response-receiver', name: 'Custom Response Receiver', version: '0.1.0', type: 'source' });
    expect(comp.body.data.code_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(comp.body.data.configurable_props).toEqual([
      { name: 'http', type: '$.interface.http', customResponse: true },
      { name: 'greeting', type: 'string', label: 'Greeting', optional: true, default: 'hello' },
    ]);
    const src = (await c.post('/v1/sources', { component_id: comp.body.data.id, configured_props: { greeting: 'hi' } })).body.data;
    expect(src.configured_props).toEqual({ greeting: 'hi', http: { endpoint_url: src.endpoint_url } });
    const r = await hit(src.endpoint_url, { a: 1 }, '/x/y');
    expect(r.status).toBe(201);
    expect(r.headers.get('x-greeting')).toBe('hi');
    expect(await r.json()).toEqual({ greeting: 'hi', received: { a: 1 }, path: expect.stringMatching(/\/x\/y$/) });
    const g = await fetch(src.endpoint_url);
    expect(g.status).toBe(200);
    const failed = await hit(src.endpoint_url, {}, '', '?fail=1');
    expect(failed.status).toBe(500);
    expect(((await failed.json()) as { error: string }).error).toMatch(/asked to fail/);
    const silent = await hit(src.endpoint_url, {}, '', '?silent=1');
    expect(silent.status).toBe(502);
    expect(((await silent.json()) as { code: string }).code).toBe('no_response');
    const errs = await events(src.id, 1, '$errors');
    expect(errs[0].event.error.message).toMatch(/asked to fail/);
  });

  it('respond() without customResponse fails the run with a clear error; status must be 200..599', async () => {
    const noCustom = `export default { name: "nc", version: "1", props: { http: { type: "$.interface.http" } },
      run() { this.http.respond({ status: 200, body: "x" }); } }`;
    const src = (await c.post('/v1/sources', { component_code: noCustom })).body.data;
    expect((await hit(src.endpoint_url, {})).status).toBe(200);
    const run = await eventually(async () => (await c.get(`/v1/sources/${src.id}/logs`)).body.data.find((l: { kind: string }) => l.kind === 'run'), 10_000, 'run logged');
    expect(run.ok).toBe(false);
    expect(run.error.message).toMatch(/customResponse/);
    const badStatus = `export default { name: "bs", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
      run() { this.http.respond({ status: 600 }); } }`;
    const src2 = (await c.post('/v1/sources', { component_code: badStatus })).body.data;
    const r = await hit(src2.endpoint_url, {});
    expect(r.status).toBe(500);
    expect(((await r.json()) as { error: string }).error).toMatch(/200.*599|status/);
  });

  it('dedupe unique / greatest / last follow spec 6.2, also after a restart', async () => {
    const ids: Record<string, { id: string; endpoint_url: string }> = {};
    for (const s of ['unique', 'greatest', 'last']) {
      ids[s] = (await c.post('/v1/sources', { component_code: fixture(`dedupe-${s}`) })).body.data;
      expect(ids[s].id).toMatch(/^dc_/);
    }
    const post = async (s: string, items: unknown[]) => {
      const r = await hit(await endpoint(ids[s].id), { items });
      expect(r.status).toBe(200);
    };
    const emitted = async (s: string, n: number) => (await events(ids[s].id, n, '')).map((e: { event: { id: unknown } }) => e.event.id).reverse();

    await post('unique', [{ id: 'a' }, { id: 'b' }, { id: 'a' }]);
    await post('greatest', [{ id: 5 }, { id: 3 }, { id: 8 }]);
    await post('last', [{ id: 'x', ts: 2 }, { id: 'w', ts: 1 }]);
    expect(await emitted('unique', 2)).toEqual(['a', 'b']);
    expect(await emitted('greatest', 2)).toEqual([5, 8]);
    expect(await emitted('last', 2)).toEqual(['w', 'x']);

    await restart();
    await post('unique', [{ id: 'b' }, { id: 'c' }]);
    await post('greatest', [{ id: 7 }, { id: 9 }]);
    await post('last', [{ id: 'w', ts: 1 }, { id: 'x', ts: 2 }, { id: 'y', ts: 3 }]);
    expect(await emitted('unique', 3)).toEqual(['a', 'b', 'c']);
    expect(await emitted('greatest', 3)).toEqual([5, 8, 9]);
    expect(await emitted('last', 3)).toEqual(['w', 'x', 'y']);

    // No id under dedupe: refused with a clear log line.
    await post('unique', [{ name: 'no id' }]);
    const logs = await eventually(async () => {
      const l = (await c.get(`/v1/sources/${ids.unique.id}/logs`)).body.data;
      return l.find((x: { logs: { message: string }[] }) => x.logs.some((m) => /without an id/.test(m.message)));
    }, 10_000, 'refusal logged');
    expect(logs).toBeTruthy();
  });

  it('$.service.db keeps state across runs and restarts', async () => {
    const src = (await c.post('/v1/sources', { component_code: fixture('db-counter') })).body.data;
    for (let i = 0; i < 3; i++) expect((await hit(src.endpoint_url, {})).status).toBe(200);
    await events(src.id, 3);
    await restart();
    expect((await hit(await endpoint(src.id), {})).status).toBe(200);
    const all = await events(src.id, 4);
    expect(all[0].event).toEqual({ count: 4, history: [1, 2, 3, 4] });
    const history = (await c.get(`/v1/sources/${src.id}/history`, { limit: '100' })).body.data;
    expect(history.filter((e: { type: string }) => e.type === 'source.db_set.v1').length).toBe(8);
  });

  it('secret props: used in run, never returned, never in clear in the log', async () => {
    const token = 'tok_super_secret_value_123';
    const src = (await c.post('/v1/sources', { component_code: fixture('secret-holder'), configured_props: { token } })).body.data;
    expect(JSON.stringify(src)).not.toContain(token);
    expect(src.configured_props).toEqual({ region: 'eu', http: { endpoint_url: src.endpoint_url } });
    await hit(src.endpoint_url, {});
    const [e] = await events(src.id, 1);
    expect(e.event).toEqual({ tokenLength: token.length, tokenSha256: createHash('sha256').update(token).digest('hex'), region: 'eu' });
    const history = await c.get(`/v1/sources/${src.id}/history`, { limit: '100' });
    expect(JSON.stringify(history.body)).not.toContain(token);
    expect(JSON.stringify(history.body)).toContain('[secret]');
    // The scan sees the latest writes (the emitted event is there) and no clear-text token anywhere.
    const files = ['sluice.db', 'sluice.db-wal'].map((f) => readFileSync(join(server.dataDir, f)));
    expect(files.some((raw) => raw.includes(Buffer.from('tokenSha256')))).toBe(true);
    expect(files.some((raw) => raw.includes(Buffer.from(token)))).toBe(false);
    const bad = await c.post('/v1/sources', { component_code: fixture('secret-holder'), configured_props: { token: 1, region: 'mars' } });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.details.fields).sort()).toEqual(['configured_props.region', 'configured_props.token']);
  });

  it('hooks run in the order of spec section 3 on deploy, update, active toggles and delete', async () => {
    const src = (await c.post('/v1/sources', { component_code: fixture('lifecycle-recorder') })).body.data;
    const hooks = async () => {
      const h = (await c.get(`/v1/sources/${src.id}/history`, { limit: '100' })).body.data;
      return h.filter((e: { type: string }) => e.type === 'source.hook_ran.v1').map((e: { data: { hook: string } }) => e.data.hook);
    };
    expect(await hooks()).toEqual(['deploy', 'activate']);
    const logs = (await c.get(`/v1/sources/${src.id}/logs`)).body.data;
    expect(JSON.stringify(logs)).toContain(src.endpoint_url);
    expect((await c.put(`/v1/sources/${src.id}`, { configured_props: { label: 'b' } })).status).toBe(200);
    expect(await hooks()).toEqual(['deploy', 'activate', 'deactivate', 'activate']);
    expect((await c.put(`/v1/sources/${src.id}`, { active: false })).body.data.active).toBe(false);
    expect(await hooks()).toEqual(['deploy', 'activate', 'deactivate', 'activate', 'deactivate']);
    expect((await c.put(`/v1/sources/${src.id}`, { active: true })).body.data.active).toBe(true);
    await hit(src.endpoint_url, {});
    const [e] = await events(src.id, 1);
    expect(e.event.hooks).toEqual(['deploy:a', 'activate:a', 'deactivate:a', 'activate:b', 'deactivate:b', 'activate:b']);
    expect((await c.del(`/v1/sources/${src.id}`)).status).toBe(200);
  });

  it('a deactivate hook that throws blocks delete unless ignore_hook_errors=true', async () => {
    const code = fixture('lifecycle-recorder').replace('async deactivate() { this.record("deactivate"); }', 'async deactivate() { throw new Error("cannot unregister"); }');
    const src = (await c.post('/v1/sources', { component_code: code })).body.data;
    const refused = await c.del(`/v1/sources/${src.id}`);
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('hook_failed');
    expect(refused.body.error).toMatch(/cannot unregister/);
    expect((await c.get(`/v1/sources/${src.id}`)).status).toBe(200);
    expect((await c.del(`/v1/sources/${src.id}`, { ignore_hook_errors: 'true' })).status).toBe(200);
    expect((await c.get(`/v1/sources/${src.id}`)).status).toBe(404);
  });

  it('components built by spreading a shared object work unchanged', async () => {
    const src = (await c.post('/v1/sources', { component_code: fixture('common-spread'), configured_props: { multiplier: 3 } })).body.data;
    await hit(src.endpoint_url, { n: 7 });
    const [e] = await events(src.id, 1);
    expect(e.event).toEqual({ label: 'evt-7', value: 21 });
    expect(e.metadata.summary).toBe('evt-7 received');
    const bad = await c.post('/v1/sources', { component_code: fixture('common-spread'), configured_props: { multiplier: 11 } });
    expect(bad.status).toBe(400);
    expect(bad.body.details.fields['configured_props.multiplier']).toMatch(/at most 10/);
  });

  it('packages imported by name with version pins are installed at save and bundled', async () => {
    const r = await c.post('/v1/sources', { component_code: fixture('packages-pinned') });
    expect(r.status).toBe(200);
    await hit(r.body.data.endpoint_url, { text: 'Fish fish bird', at: '2024-02-29T23:30:00Z' });
    const [e] = await events(r.body.data.id, 1);
    expect(e.event).toEqual({ lodashVersion: '4.17.21', counts: { fish: 2, bird: 1 }, day: '2024-02-29' });
    const missing = await c.post('/v1/sources', { component_code: 'import x from "sluice-no-such-package-zz9";\nexport default { name: "m", version: "1", run() {} }' });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatch(/sluice-no-such-package-zz9/);
  });

  it('publishing puts key@version in the registry: semver required, same version with other code is a 409', async () => {
    const code = (v: string, body = 'this.$emit(1)') => `export default { key: "acme-thing", name: "Acme Thing", version: "${v}",
      description: "Things from Acme", props: { http: { type: "$.interface.http" } }, run() { ${body} } }`;
    const notSemver = await c.post('/v1/components', { component_code: code('v1'), publish: true });
    expect(notSemver.status).toBe(400);
    expect(notSemver.body.details.fields.version).toMatch(/semantic version/);
    expect((await c.post('/v1/components', { component_code: code('v1') })).status).toBe(200);
    const v1 = await c.post('/v1/components', { component_code: code('1.0.0'), publish: true });
    expect(v1.status).toBe(200);
    expect((await c.post('/v1/components', { component_code: code('1.0.0'), publish: true })).body.data.id).toBe(v1.body.data.id);
    const clash = await c.post('/v1/components', { component_code: code('1.0.0', 'this.$emit(2)'), publish: true });
    expect(clash.status).toBe(409);
    const v2 = await c.post('/v1/components', { component_code: code('1.1.0', 'this.$emit(2)'), publish: true });
    expect(v2.status).toBe(200);
    // The account's own keys; the built-in ones are listed beside them (test/builtin-registry.e2e-spec.ts).
    expect((await c.get('/v1/components/registry')).body.data.filter((d: { builtin: boolean }) => !d.builtin)).toEqual([
      { key: 'acme-thing', version: '1.1.0', type: 'source', component_id: v2.body.data.id, name: 'Acme Thing', description: 'Things from Acme', builtin: false },
    ]);
    expect((await c.get('/v1/components/registry/acme-thing')).body.data.version).toBe('1.1.0');
    expect((await c.get('/v1/components/search', { query: 'acme' })).body).toEqual({ sources: ['acme-thing'], actions: [] });
    expect((await c.get('/v1/components/search', { query: 'zebra' })).body).toEqual({ sources: [], actions: [] });
    const deployed = await c.post('/v1/sources', { key: 'acme-thing' });
    expect(deployed.body.data.component_id).toBe(v2.body.data.id);
  });

  it('run now returns what the run emitted and logged', async () => {
    const src = (await c.post('/v1/sources', { component_code: fixture('db-counter') })).body.data;
    const r = await c.post(`/v1/sources/${src.id}/run`);
    expect(r.status).toBe(200);
    expect(r.body.data.ok).toBe(true);
    expect(r.body.data.emitted[0].event).toEqual({ count: 1, history: [1] });
  });

  it('DELETE /events clears a range of event summaries', async () => {
    const src = (await c.post('/v1/sources', { component_code: fixture('db-counter') })).body.data;
    for (let i = 0; i < 4; i++) await hit(src.endpoint_url, {});
    const all = await events(src.id, 4);
    const [newest, second, third] = all;
    const cleared = await c.del(`/v1/sources/${src.id}/events`, { start_id: third.id, end_id: second.id });
    expect(cleared.status).toBe(202);
    const left = (await c.get(`/v1/sources/${src.id}/event_summaries`)).body.data.map((e: { id: string }) => e.id);
    expect(left).toEqual([newest.id, all[3].id]);
    expect((await c.del(`/v1/sources/${src.id}/events`)).status).toBe(202);
    expect((await c.get(`/v1/sources/${src.id}/event_summaries`)).body.data).toEqual([]);
  });
});
