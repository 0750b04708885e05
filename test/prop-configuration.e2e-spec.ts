import { readdirSync, readFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { bundleLocalComponent } from '../apps/cli/pd-client';
import { api, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';

const FIXTURES = join(__dirname, 'fixtures', 'components', 'forum');

const CATEGORIES = [
  { id: 1, name: 'General' },
  { id: 2, name: 'Dev Ops' },
  { id: 3, name: 'Dev Web' },
  { id: 4, name: 'Sales' },
  { id: 5, name: 'Support' },
];
const TAGS: Record<string, string[]> = { 2: ['kubernetes', 'terraform'], 3: ['css'] };
const FIELDS: Record<string, unknown[]> = {
  1: [],
  2: [{ name: 'severity', label: 'Severity', required: true, choices: ['low', 'high'] }, { name: 'team', label: 'Team', required: false }],
};

/** A self-hosted forum's API on 127.0.0.1: categories paginated by cursor (2 a page) and searchable, tags and custom fields per category. */
async function startForum(): Promise<{ url: string; requests: IncomingMessage[]; close(): Promise<void> }> {
  const requests: IncomingMessage[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req);
    const u = new URL(req.url!, 'http://forum');
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (u.pathname === '/categories.json') {
      const q = (u.searchParams.get('q') ?? '').toLowerCase();
      const matching = CATEGORIES.filter((c) => c.name.toLowerCase().includes(q));
      const start = Number(u.searchParams.get('cursor') ?? 0);
      const next = start + 2 < matching.length ? String(start + 2) : null;
      return json(200, { categories: matching.slice(start, start + 2), next_cursor: next });
    }
    const m = /^\/c\/(\d+)\/(tags|fields)\.json$/.exec(u.pathname);
    if (m) return json(200, m[2] === 'tags' ? { tags: TAGS[m[1]] ?? [] } : { fields: FIELDS[m[1]] ?? [] });
    json(404, { error: 'not found' });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('Configuring props as a UI does: async options, dependent propDefinitions, reloadProps (forum fixtures)', () => {
  const dataDir = newDataDir();
  const key = 'sk_props_owner_0123456789abcdef';
  const otherKey = 'sk_props_other_0123456789abcdef';
  let server: SluiceProcess;
  let forum: Awaited<ReturnType<typeof startForum>>;
  let c: ReturnType<typeof api>;
  let topics: string;
  let formPosts: string;

  beforeAll(async () => {
    await runAdmin(dataDir, ['create-account', '--name', 'owner', '--key', key]);
    await runAdmin(dataDir, ['create-account', '--name', 'other', '--key', otherKey]);
    forum = await startForum();
    server = await startSluice({ dataDir, apiKey: key, env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
    c = api(server.url, key);
    const save = async (file: string) => {
      const r = await c.post('/v1/components', { component_code: await bundleLocalComponent(join(FIXTURES, file)) });
      expect(r.status).toBe(200);
      return r.body.data.id as string;
    };
    topics = await save('new-topics.mjs');
    formPosts = await save('new-form-posts.mjs');
  });
  afterAll(async () => {
    await server?.stop();
    await forum?.close();
    removeDataDir(dataDir);
  });

  const options = (component: string, prop: string, body: Record<string, unknown>) => c.post(`/v1/components/${component}/props/${prop}/options`, body);

  it("pages through an app propDefinition's async options with context / prev_context", async () => {
    const configured_props = { instance_url: forum.url };
    const first = await options(topics, 'category', { configured_props });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({ options: [{ label: 'General', value: '1' }, { label: 'Dev Ops', value: '2' }], context: { cursor: '2' } });
    const second = await options(topics, 'category', { configured_props, page: 1, prev_context: first.body.data.context });
    expect(second.body.data).toEqual({ options: [{ label: 'Dev Web', value: '3' }, { label: 'Sales', value: '4' }], context: { cursor: '4' } });
    const last = await options(topics, 'category', { configured_props, page: 2, prev_context: second.body.data.context });
    expect(last.body.data).toEqual({ options: [{ label: 'Support', value: '5' }], context: { cursor: null } });
    // The forum saw the page and cursor the UI asked for, from the app's own method.
    const asked = forum.requests.filter((r) => r.url!.startsWith('/categories.json')).slice(-3).map((r) => new URL(r.url!, 'http://f').searchParams.toString());
    expect(asked).toEqual(['page=0', 'page=1&cursor=2', 'page=2&cursor=4']);
    expect(forum.requests.at(-1)!.headers['api-username']).toBe('system');
  });

  it('searches with useQuery: the query reaches the options method', async () => {
    const r = await options(topics, 'category', { configured_props: { instance_url: forum.url }, query: 'dev' });
    expect(r.status).toBe(200);
    expect(r.body.data.options).toEqual([{ label: 'Dev Ops', value: '2' }, { label: 'Dev Web', value: '3' }]);
  });

  it('takes its parameters from the query string too', async () => {
    const r = await c.post(`/v1/components/${topics}/props/category/options`, undefined, {
      configured_props: JSON.stringify({ instance_url: forum.url }), page: '1', query: 'dev', prev_context: '',
    });
    expect(r.status).toBe(200);
    expect(r.body.data.options).toEqual([{ label: 'Dev Ops', value: '2' }, { label: 'Dev Web', value: '3' }]);
    const asked = new URL(forum.requests.at(-1)!.url!, 'http://f').searchParams.toString();
    expect(asked).toBe('page=1&q=dev');
  });

  it('gives a two-level dependent propDefinition the props configured so far (tags of the chosen category)', async () => {
    const devOps = await options(topics, 'tag', { configured_props: { instance_url: forum.url, category: '2' } });
    expect(devOps.body.data).toEqual({ options: ['kubernetes', 'terraform'], context: null });
    const web = await options(topics, 'tag', { configured_props: { instance_url: forum.url, category: '3' } });
    expect(web.body.data).toEqual({ options: ['css'], context: null });
    const none = await options(topics, 'tag', { configured_props: { instance_url: forum.url } });
    expect(none.body.data).toEqual({ options: [], context: null });
  });

  it('answers a ConfigurationError with 400 configuration_error and its message only, another error with 400 component_failed', async () => {
    const r = await options(topics, 'category', { configured_props: {} });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 'configuration_error', error: 'Set the forum URL (instance_url) before choosing from the forum' });
    // Any other error of the code: 400 component_failed naming the call and the error.
    const thrown = await options(topics, 'tag', { configured_props: { instance_url: forum.url, category: 'x' } });
    expect(thrown.status).toBe(400);
    expect(thrown.body).toMatchObject({
      code: 'component_failed',
      error: 'the options of prop "tag" failed: Error: forum answered 404 for /c/x/tags.json',
      details: { call: 'the options of prop "tag"', error: { name: 'Error', message: 'forum answered 404 for /c/x/tags.json' }, logs: [] },
    });
  });

  it('404s an unknown prop, an unknown component and another account\'s component; 400s bad input naming the field', async () => {
    expect((await options(topics, 'nope', {})).status).toBe(404);
    expect((await options('sc_doesnotexist', 'category', {})).status).toBe(404);
    const other = api(server.url, otherKey);
    const theirs = await other.post(`/v1/components/${topics}/props/category/options`, { configured_props: { instance_url: forum.url } });
    expect(theirs.status).toBe(404);
    expect((await other.post(`/v1/components/${formPosts}/props/reload`, {})).status).toBe(404);
    const badPage = await options(topics, 'category', { page: -1 });
    expect(badPage.status).toBe(400);
    expect(badPage.body.details.fields).toHaveProperty('page');
    const badProps = await options(topics, 'category', { configured_props: [1] });
    expect(badProps.status).toBe(400);
    expect(badProps.body.details.fields).toHaveProperty('configured_props');
    const bigContext = await options(topics, 'category', { prev_context: { cursor: 'x'.repeat(20_000) } });
    expect(bigContext.status).toBe(400);
    expect(bigContext.body.details.fields).toHaveProperty('prev_context');
  });

  it('reloads props: additionalProps() runs for the values chosen so far and its result replaces the earlier one', async () => {
    const before = await c.post(`/v1/components/${formPosts}/props/reload`, { configured_props: { instance_url: forum.url } });
    expect(before.status).toBe(200);
    // The saved component shows the same static props.
    const saved = await c.get(`/v1/components/${formPosts}`);
    expect(saved.body.data.configurable_props).toEqual(before.body.data.configurable_props);
    const names = (r: typeof before) => (r.body.data.configurable_props as { name: string }[]).map((p) => p.name);
    expect(names(before)).toEqual(['forum', 'db', 'instance_url', 'timer', 'category']);
    const devOps = await c.post(`/v1/components/${formPosts}/props/reload`, { configured_props: { instance_url: forum.url, category: '2' } });
    expect(devOps.status).toBe(200);
    expect(names(devOps)).toEqual(['forum', 'db', 'instance_url', 'timer', 'category', 'field_severity', 'field_team', 'signing_secret']);
    const props = devOps.body.data.configurable_props as Record<string, unknown>[];
    expect(props.find((p) => p.name === 'category')).toMatchObject({
      type: 'string', label: 'Category', reloadProps: true, useQuery: true, remoteOptions: true, propDefinition: ['forum', 'category'],
    });
    expect(props.find((p) => p.name === 'field_severity')).toEqual({ name: 'field_severity', type: 'string', label: 'Severity', optional: false, options: ['low', 'high'] });
    expect(props.find((p) => p.name === 'signing_secret')).toMatchObject({ type: 'string', secret: true });
    // The options of a prop that only additionalProps() adds.
    const severity = await options(formPosts, 'field_severity', { configured_props: { instance_url: forum.url, category: '2' } });
    expect(severity.body.data).toEqual({ options: ['low', 'high'], context: null });
    expect((await options(formPosts, 'field_severity', { configured_props: { instance_url: forum.url } })).status).toBe(404);
    // Another choice: the earlier extra props are gone, not kept beside the new ones.
    const general = await c.post(`/v1/components/${formPosts}/props/reload`, { configured_props: { instance_url: forum.url, category: '1' } });
    expect(general.status).toBe(400);
    expect(general.body).toEqual({ code: 'configuration_error', error: 'Category 1 has no custom fields; add one in the forum first' });
    const web = await c.post(`/v1/components/${formPosts}/props/reload`, { configured_props: { instance_url: forum.url, category: '3' } });
    expect(web.status).toBe(400);
  });

  it('requires the extra props at deploy (400 naming them), accepts them when given, seals the secret one', async () => {
    const base = { instance_url: forum.url, category: '2' };
    const missing = await c.post('/v1/sources', { component_id: formPosts, configured_props: base });
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('invalid_request');
    expect(missing.body.details.fields).toEqual({ 'configured_props.field_severity': 'is required', 'configured_props.signing_secret': 'is required' });
    const wrongChoice = await c.post('/v1/sources', { component_id: formPosts, configured_props: { ...base, field_severity: 'medium', signing_secret: 's' } });
    expect(wrongChoice.status).toBe(400);
    expect(wrongChoice.body.details.fields['configured_props.field_severity']).toMatch(/must be one of/);
    const refused = await c.post('/v1/sources', { component_id: formPosts, configured_props: { ...base, category: '1', field_severity: 'low' } });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('configuration_error');

    const ok = await c.post('/v1/sources', { component_id: formPosts, configured_props: { ...base, field_severity: 'high', signing_secret: 'shh-its-secret' } });
    expect(ok.status).toBe(200);
    expect(ok.body.data.configured_props).toMatchObject({ instance_url: forum.url, category: '2', field_severity: 'high' });
    expect(ok.body.data.configured_props).not.toHaveProperty('signing_secret');
    const run = await c.post(`/v1/sources/${ok.body.data.id}/run`);
    expect(run.status).toBe(200);
    // The run sees the secret opened (its length; the value itself is never emitted).
    expect(JSON.stringify(run.body.data)).toContain('"secret_length":14');
    expect(JSON.stringify(run.body.data)).toContain('["field_severity","high"]');
    // The extra secret is sealed like a static one: nowhere in clear under the data dir.
    for (const file of readdirSync(dataDir).filter((f) => f.startsWith('sluice.db'))) {
      expect(readFileSync(join(dataDir, file)).includes('shh-its-secret')).toBe(false);
    }

    const update = await c.put(`/v1/sources/${ok.body.data.id}`, { configured_props: { ...base, field_severity: 'low' } });
    expect(update.status).toBe(400);
    expect(update.body.details.fields).toEqual({ 'configured_props.signing_secret': 'is required' });
    const renamed = await c.put(`/v1/sources/${ok.body.data.id}`, { name: 'renamed' });
    expect(renamed.status).toBe(200);
  });

  it('validates action runs and workflow steps against the props additionalProps() adds', async () => {
    const action = `export default { name: "shout", version: "1", type: "action",
      props: { loud: { type: "boolean", reloadProps: true } },
      additionalProps() { return this.loud ? { times: { type: "integer", min: 1, max: 5 } } : {}; },
      async run() { return "hey".repeat(this.times ?? 1); } }`;
    const missing = await c.post('/v1/actions/run', { component_code: action, configured_props: { loud: true } });
    expect(missing.status).toBe(400);
    expect(missing.body.details.fields).toEqual({ 'configured_props.times': 'is required' });
    const tooMany = await c.post('/v1/actions/run', { component_code: action, configured_props: { loud: true, times: 9 } });
    expect(tooMany.body.details.fields).toEqual({ 'configured_props.times': 'must be at most 5' });
    const ran = await c.post('/v1/actions/run', { component_code: action, configured_props: { loud: true, times: 2 } });
    expect(ran.status).toBe(200);
    expect(ran.body.data.ret).toBe('heyhey');
    const quiet = await c.post('/v1/actions/run', { component_code: action, configured_props: { loud: false } });
    expect(quiet.body.data.ret).toBe('hey');
    const workflow = await c.post('/v1/workflows', { name: 'shouting', trigger: { type: 'manual' }, steps: [{ name: 'shout', component_code: action, configured_props: { loud: true } }] });
    expect(workflow.status).toBe(400);
    expect(workflow.body.details.fields).toEqual({ 'steps[0].configured_props.times': 'is required' });
  });

  it("keeps module state per account: one account's options calls never see another's", async () => {
    const code = `let calls = 0;
      export default { name: "counter", version: "1", props: { n: { type: "string", options() { calls++; return [String(calls)]; } } }, async run() {} }`;
    const other = api(server.url, otherKey);
    const mine = (await c.post('/v1/components', { component_code: code })).body.data.id;
    const theirs = (await other.post('/v1/components', { component_code: code })).body.data.id;
    expect((await options(mine, 'n', {})).body.data.options).toEqual(['1']);
    expect((await options(mine, 'n', {})).body.data.options).toEqual(['2']);
    const first = await other.post(`/v1/components/${theirs}/props/n/options`, {});
    expect(first.body.data.options).toEqual(['1']);
  });

  it('ends an options method that loops forever with a clear error, and the server keeps serving', async () => {
    const saved = await c.post('/v1/components', { component_code: `export default { name: "spinner", version: "1",
      props: { pick: { type: "string", async options() { for (;;) {} } }, calm: { type: "string", async options() { return ["ok"]; } } },
      async run() {} }` });
    expect(saved.status).toBe(200);
    const spin = await options(saved.body.data.id, 'pick', {});
    expect(spin.status).toBe(400);
    expect(spin.body.code).toBe('component_failed');
    expect(spin.body.details.error).toEqual({ name: 'TimeoutError', message: expect.stringContaining('did not finish within') });
    expect((await c.get('/v1/users/me')).status).toBe(200);
    const calm = await options(saved.body.data.id, 'calm', {});
    expect(calm.body.data).toEqual({ options: ['ok'], context: null });
    const tags = await options(topics, 'tag', { configured_props: { instance_url: forum.url, category: '3' } });
    expect(tags.body.data.options).toEqual(['css']);
  });
});
