import { createServer, Server } from 'node:http';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { FakeOAuthProvider } from './support/fake-oauth-provider';
import { api, eventually, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';

const FIXTURES = join(__dirname, 'fixtures', 'components', 'apps');

/**
 * A fixture with the fixtures it imports (`import x from "./y.mjs";`) inlined as constants:
 * `component_code` is one module, and the files stay as a registry integration lays them out.
 */
function inlined(file: string, as?: string): string {
  const text = readFileSync(join(FIXTURES, file), 'utf8')
    .replace(/^import (\w+) from "\.\/([\w.-]+)";$/gm, (_line, name: string, dep: string) => inlined(dep, name));
  return as ? text.replace(/^export default /m, `const ${as} = `) : text;
}
const ROCKETCHAT_ME = inlined('rocketchat-me.mjs');
const NEW_TOPICS = inlined('discourse-new-topics.mjs');
const OAUTH_ME = readFileSync(join(FIXTURES, 'oauth-me.mjs'), 'utf8');
const DISCOURSE_LATEST = inlined('discourse-latest.mjs');
const FORUM_KEY = 'discourse_key_5e1f0c2b7d9a4e38';

const SERVER_ENV = { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1', SLUICE_OAUTH_REFRESH_SWEEP_MS: '3600000' };
const USER_ID = 'rc-user-42';
const TOKEN_1 = 'rc_pat_first_9f8e7d6c5b4a39281706';
const TOKEN_2 = 'rc_pat_second_1a2b3c4d5e6f7a8b9c0d';

/** A fake Rocket.Chat: `/api/v1/me` answers only for the user id and the token it currently accepts. */
class FakeRocketChat {
  accepted = TOKEN_1;
  readonly seen: { userId?: string; token?: string }[] = [];
  private server?: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const userId = req.headers['x-user-id'] as string | undefined;
      const token = req.headers['x-auth-token'] as string | undefined;
      this.seen.push({ userId, token });
      const ok = req.url === '/api/v1/me' && userId === USER_ID && token === this.accepted;
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
      res.end(JSON.stringify(ok ? { username: 'rocket.cat' } : { error: 'unauthorized' }));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** A fake Discourse forum: `/latest.json` lists `topics` (newest first) only for the API key and username it issued. */
async function startForum() {
  const forum = {
    topics: [
      { id: 2, title: 'Release notes', created_at: '2026-11-02T10:00:00Z' },
      { id: 1, title: 'Welcome', created_at: '2026-11-01T10:00:00Z' },
    ],
    refused: 0,
    url: '',
    close: () => server.close(),
  };
  const server = createServer((req, res) => {
    const ok = req.url === '/latest.json' && req.headers['api-key'] === FORUM_KEY && req.headers['api-username'] === 'system';
    if (!ok) forum.refused++;
    res.writeHead(ok ? 200 : 403, { 'content-type': 'application/json' });
    res.end(JSON.stringify(ok ? { topic_list: { topics: forum.topics } } : { errors: ['forbidden'] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  forum.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return forum;
}

/** Every file under a directory (the SQLite -wal and -shm files included). */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

/** The OAuth dance as a browser does it: start (API key) -> provider's authorize -> callback (no API key). */
async function connectOAuth(server: SluiceProcess, key: string, slug: string, query: Record<string, string>) {
  const startUrl = new URL(`/v1/apps/${slug}/oauth/start`, server.url);
  for (const [k, v] of Object.entries(query)) startUrl.searchParams.set(k, v);
  const start = await fetch(startUrl, { headers: { authorization: `Bearer ${key}` }, redirect: 'manual' });
  expect(start.status).toBe(302);
  const authorize = new URL(start.headers.get('location')!);
  const atProvider = await fetch(authorize, { redirect: 'manual' });
  expect(atProvider.status).toBe(302);
  const callback = new URL(atProvider.headers.get('location')!);
  const done = await fetch(callback);
  return { authorize, callback, status: done.status, body: await done.json() as any };
}

describe('apps and connected accounts', () => {
  const provider = new FakeOAuthProvider();
  const rc = new FakeRocketChat();
  let server: SluiceProcess;
  let otherKey: string;

  beforeAll(async () => {
    await provider.start();
    await rc.start();
    const dir = newDataDir();
    await runAdmin(dir, ['create-account', '--name', 'owner', '--key', 'sk_apps_owner_0123456789']);
    otherKey = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'other'])).api_key;
    // Component fetches reach the fake APIs; the server's own requests (token endpoint) too. The
    // background refresher is slowed down here so the renewals seen are those runs ask for (the
    // last describe tests the refresher).
    server = await startSluice({ dataDir: dir, apiKey: 'sk_apps_owner_0123456789', env: SERVER_ENV });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
    await provider.stop();
    await rc.stop();
  });

  let listedBeforeStop: unknown[] = [];
  const registerForge = async (key: string) => api(server.url, key).post('/v1/apps', {
    name_slug: 'forge', name: 'Forge', auth_type: 'oauth',
    oauth: { authorize_url: `${provider.url}/authorize`, token_url: `${provider.url}/token`, client_id: provider.clientId, client_secret: provider.clientSecret, scopes: ['repo', 'user'] },
  });

  it('lists the catalog: key apps with their fields, OAuth apps without a client until the operator sets one', async () => {
    const c = api(server.url, server.apiKey);
    const apps = (await c.get('/v1/apps')).body.data as any[];
    expect(apps.find((a) => a.name_slug === 'rocketchat')).toEqual({
      name_slug: 'rocketchat', name: 'Rocket.Chat', auth_type: 'keys', custom: false,
      fields: [{ name: 'url', label: 'Server URL', secret: false }, { name: 'user_id', label: 'User ID', secret: false }, { name: 'auth_token', label: 'Personal access token', secret: true }],
    });
    expect(apps.find((a) => a.name_slug === 'discourse').fields.map((f: any) => f.name)).toEqual(['domain', 'api_key', 'api_username']);
    expect(apps.find((a) => a.name_slug === 'github')).toMatchObject({ auth_type: 'oauth', oauth: { client_configured: false } });
    const start = await c.get('/v1/apps/github/oauth/start', { name: 'x' });
    expect(start.status).toBe(409);
    expect(start.body.error).toContain('SLUICE_OAUTH_GITHUB_CLIENT_ID');
  });

  it('a key app account drives a source: this.<app>.$auth in the app\'s methods, read-only, and new credentials take effect', async () => {
    const c = api(server.url, server.apiKey);
    const created = await c.post('/v1/accounts', { app: 'rocketchat', name: 'team chat', credentials: { url: rc.url, user_id: USER_ID, auth_token: TOKEN_1 } });
    expect(created.status).toBe(200);
    const acct = created.body.data;
    expect(acct).toEqual({ id: expect.stringMatching(/^apn_/), app: 'rocketchat', name: 'team chat', created_at: expect.any(Number), updated_at: expect.any(Number), healthy: true });
    for (const r of [created, await c.get(`/v1/accounts/${acct.id}`), await c.get('/v1/users/me/accounts', { app: 'rocketchat' })]) {
      expect(JSON.stringify(r.body)).not.toContain(TOKEN_1);
    }
    expect((await c.get('/v1/users/me/accounts', { app: 'rocketchat' })).body.data.map((a: any) => a.id)).toEqual([acct.id]);
    expect((await c.get('/v1/users/me/accounts', { app: 'discourse' })).body.data).toEqual([]);

    const src = await c.post('/v1/sources', { component_code: ROCKETCHAT_ME, configured_props: { rocketchat: { authProvisionId: acct.id } } });
    expect(src.status).toBe(200);
    expect(src.body.data.configured_props).toEqual({ rocketchat: { authProvisionId: acct.id } });
    const run = (await c.post(`/v1/sources/${src.body.data.id}/run`)).body.data;
    expect(run.ok).toBe(true);
    expect(run.emitted[0].event).toEqual({ username: 'rocket.cat', readOnly: true, fields: ['auth_token', 'url', 'user_id'] });
    expect(rc.seen.at(-1)).toEqual({ userId: USER_ID, token: TOKEN_1 });

    // The user rotates the token at Rocket.Chat and gives the new one to Sluice.
    rc.accepted = TOKEN_2;
    const bad = await c.put(`/v1/accounts/${acct.id}`, { credentials: { url: rc.url, user_id: USER_ID } });
    expect(bad.status).toBe(400);
    expect(bad.body.details.fields).toEqual({ 'credentials.auth_token': 'is required' });
    const put = await c.put(`/v1/accounts/${acct.id}`, { name: 'team chat (new token)', credentials: { url: rc.url, user_id: USER_ID, auth_token: TOKEN_2 } });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({ name: 'team chat (new token)', healthy: true });
    const again = (await c.post(`/v1/sources/${src.body.data.id}/run`)).body.data;
    expect(again.ok).toBe(true);
    expect(rc.seen.at(-1)).toEqual({ userId: USER_ID, token: TOKEN_2 });
  });

  it('refuses bad accounts and bad app props with 400s naming the field, and stores nothing', async () => {
    const c = api(server.url, server.apiKey);
    const before = (await c.get('/v1/users/me/accounts')).body.data.length;
    const sourcesBefore = (await c.get('/v1/users/me/sources')).body.data.length;
    const missing = await c.post('/v1/accounts', { app: 'rocketchat', name: 'x', credentials: { url: rc.url, user_id: USER_ID } });
    expect(missing.status).toBe(400);
    expect(missing.body.details.fields).toEqual({ 'credentials.auth_token': 'is required' });
    const unknownField = await c.post('/v1/accounts', { app: 'rocketchat', name: 'x', credentials: { url: rc.url, user_id: USER_ID, auth_token: 't', password: 'p' } });
    expect(unknownField.status).toBe(400);
    expect(Object.keys(unknownField.body.details.fields)).toEqual(['credentials.password']);
    const notString = await c.post('/v1/accounts', { app: 'discourse', name: 'x', credentials: { domain: 'forum.example', api_key: 5, api_username: 'system' } });
    expect(notString.body.details.fields).toEqual({ 'credentials.api_key': 'must be a string' });
    const unknownApp = await c.post('/v1/accounts', { app: 'nope', name: 'x', credentials: {} });
    expect(unknownApp.status).toBe(400);
    expect(Object.keys(unknownApp.body.details.fields)).toEqual(['app']);
    const noCredentials = await c.post('/v1/accounts', { app: 'rocketchat', name: 'x' });
    expect(noCredentials.body.details.fields).toEqual({ credentials: 'must be an object of the app\'s fields' });
    const noName = await c.post('/v1/accounts', { app: 'rocketchat', credentials: {} });
    expect(noName.body.details.fields).toEqual({ name: 'is required' });
    expect((await c.get('/v1/users/me/accounts')).body.data.length).toBe(before);
    expect((await c.get('/v1/users/me/sources')).body.data.length).toBe(sourcesBefore);

    const discourse = (await c.post('/v1/accounts', { app: 'discourse', name: 'forum', credentials: { domain: 'forum.example', api_key: 'dk_1', api_username: 'system' } })).body.data;
    const deploy = (props: unknown) => c.post('/v1/sources', { component_code: ROCKETCHAT_ME, configured_props: props });
    const required = await deploy({});
    expect(required.status).toBe(400);
    expect(required.body.details.fields['configured_props.rocketchat']).toMatch(/^is required/);
    const shape = await deploy({ rocketchat: 'apn_x' });
    expect(shape.body.details.fields['configured_props.rocketchat']).toMatch(/^must be \{"authProvisionId"/);
    const wrongApp = await deploy({ rocketchat: { authProvisionId: discourse.id } });
    expect(wrongApp.body.details.fields['configured_props.rocketchat']).toBe(`connected account ${discourse.id} is a discourse account; this prop needs a rocketchat account`);
    const unknown = await deploy({ rocketchat: { authProvisionId: 'apn_doesnotexist' } });
    expect(unknown.body.details.fields['configured_props.rocketchat']).toBe('connected account apn_doesnotexist not found');
    // An update is checked the same way, and a refused one leaves the stored reference alone.
    const chat = (await c.post('/v1/accounts', { app: 'rocketchat', name: 'chat', credentials: { url: rc.url, user_id: USER_ID, auth_token: 'unused' } })).body.data;
    const src = (await deploy({ rocketchat: { authProvisionId: chat.id } })).body.data;
    const update = await c.put(`/v1/sources/${src.id}`, { configured_props: { rocketchat: { authProvisionId: discourse.id } } });
    expect(update.status).toBe(400);
    expect(update.body.details.fields['configured_props.rocketchat']).toContain('is a discourse account');
    expect((await c.get(`/v1/sources/${src.id}`)).body.data.configured_props).toEqual({ rocketchat: { authProvisionId: chat.id } });

    const app = await c.post('/v1/apps', { name_slug: 'github', name: 'X', auth_type: 'oauth', oauth: { authorize_url: 'ftp://x', client_id: '' } });
    expect(app.status).toBe(400);
    expect(Object.keys(app.body.details.fields).sort()).toEqual(['name_slug', 'oauth.authorize_url', 'oauth.client_id', 'oauth.client_secret', 'oauth.token_url']);
    const keysApp = await c.post('/v1/apps', { name_slug: 'mykeys', name: 'Mine', auth_type: 'keys', fields: [{ name: 'token' }, { name: '1bad' }] });
    expect(keysApp.body.details.fields).toEqual({ 'fields.1.name': expect.stringContaining('is required') });
  });

  it('keeps accounts private: another account can neither see, change nor use an apn_', async () => {
    const c = api(server.url, server.apiKey);
    const other = api(server.url, otherKey);
    const acct = (await c.post('/v1/accounts', { app: 'openweather_api', name: 'weather', credentials: { api_key: 'ow_secret_key_123456' } })).body.data;
    expect((await other.get(`/v1/accounts/${acct.id}`)).status).toBe(404);
    expect((await other.put(`/v1/accounts/${acct.id}`, { credentials: { api_key: 'x' } })).status).toBe(404);
    expect((await other.del(`/v1/accounts/${acct.id}`)).status).toBe(404);
    expect((await other.get('/v1/users/me/accounts')).body.data).toEqual([]);
    const stolen = await other.post('/v1/sources', { component_code: ROCKETCHAT_ME.replace('app: "rocketchat"', 'app: "openweather_api"'), configured_props: { rocketchat: { authProvisionId: acct.id } } });
    expect(stolen.status).toBe(400);
    expect(stolen.body.details.fields['configured_props.rocketchat']).toBe(`connected account ${acct.id} not found`);
    // An operator's own app is the registering account's alone.
    expect((await registerForge(server.apiKey)).status).toBe(200);
    expect((await registerForge(server.apiKey)).status).toBe(409);
    expect((await other.get('/v1/apps')).body.data.map((a: any) => a.name_slug)).not.toContain('forge');
    expect((await other.get('/v1/apps/forge/oauth/start', { name: 'x' })).status).toBe(404);
    const mine = (await c.get('/v1/apps')).body.data.find((a: any) => a.name_slug === 'forge');
    expect(mine).toMatchObject({ custom: true, auth_type: 'oauth', oauth: { client_configured: true } });
    expect(JSON.stringify(mine)).not.toContain(provider.clientSecret);
  });

  it('OAuth: connect through the provider, refresh an expired token at the next run, and a revoked grant makes the account unhealthy', async () => {
    const c = api(server.url, server.apiKey);
    if ((await c.get('/v1/apps')).body.data.every((a: any) => a.name_slug !== 'forge')) await registerForge(server.apiKey);
    const { authorize, callback, status, body } = await connectOAuth(server, server.apiKey, 'forge', { name: 'my forge' });
    expect(authorize.origin + authorize.pathname).toBe(`${provider.url}/authorize`);
    expect(authorize.searchParams.get('client_id')).toBe(provider.clientId);
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${server.url}/v1/oauth/callback`);
    expect(authorize.searchParams.get('scope')).toBe('repo user');
    expect(authorize.searchParams.get('response_type')).toBe('code');
    expect(status).toBe(200);
    const acct = body.data;
    expect(acct).toMatchObject({ id: expect.stringMatching(/^apn_/), app: 'forge', name: 'my forge', healthy: true, expires_at: expect.any(Number) });
    expect(JSON.stringify(body)).not.toMatch(/forge_(at|rt)_/);
    // The state is single-purpose: tampered or replayed with another code, it is refused or the code is.
    const tampered = new URL(callback);
    tampered.searchParams.set('state', `${callback.searchParams.get('state')!.slice(0, -4)}AAAA`);
    expect((await fetch(tampered)).status).toBe(400);
    const replay = await fetch(callback);
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as any).details.fields).toEqual({ code: 'the provider refused the grant: invalid_grant' });

    const src = (await c.post('/v1/sources', { component_code: OAUTH_ME, configured_props: { forge: { authProvisionId: acct.id }, api: provider.url } })).body.data;
    const first = (await c.post(`/v1/sources/${src.id}/run`)).body.data;
    expect(first.ok).toBe(true);
    expect(first.emitted[0].event.login).toBe('octo');
    const firstToken = provider.apiTokens.at(-1)!;

    // The token expires; the next run calls the API with a renewed one (renewed by the background
    // refresher at its refresh time, or by the run).
    await eventually(() => !provider.isLive(firstToken), 10_000, 'the first access token to expire');
    const second = (await c.post(`/v1/sources/${src.id}/run`)).body.data;
    expect(second.ok).toBe(true);
    expect(provider.refreshesAccepted).toBeGreaterThanOrEqual(1);
    const secondToken = provider.apiTokens.at(-1)!;
    expect(secondToken).not.toBe(firstToken);

    // The user revokes the grant at the provider: the next renewal is refused.
    provider.revokeRefreshTokens();
    // Every access token issued so far (the background refresher renews them when due, too) expires.
    await eventually(() => provider.issued.every((t) => !provider.isLive(t)), 10_000, 'every access token to expire');
    const third = (await c.post(`/v1/sources/${src.id}/run`)).body.data;
    expect(third.ok).toBe(false);
    expect(third.error.message).toContain(acct.id);
    expect(third.error.message).toContain('reconnect it');
    expect(third.logs.at(-1).message).toContain(acct.id);
    const unhealthy = (await c.get(`/v1/accounts/${acct.id}`)).body.data;
    expect(unhealthy).toMatchObject({ healthy: false, error: 'the provider refused the grant: invalid_grant' });
    // Reconnecting through the provider gives the same account new tokens: healthy again, and the
    // source configured with it runs without being touched.
    const missingName = await c.get('/v1/apps/forge/oauth/start');
    expect(missingName.body.details.fields).toEqual({ name: 'is required (or account, to reconnect one)' });
    const reconnect = await connectOAuth(server, server.apiKey, 'forge', { account: acct.id });
    expect(reconnect.status).toBe(200);
    expect(reconnect.body.data).toMatchObject({ id: acct.id, name: 'my forge', healthy: true });
    const fourth = (await c.post(`/v1/sources/${src.id}/run`)).body.data;
    expect(fourth.ok).toBe(true);
    expect(provider.isLive(provider.apiTokens.at(-1)!)).toBe(true);
    expect((await c.get('/v1/users/me/accounts', { app: 'forge' })).body.data.map((a: any) => a.id)).toEqual([acct.id]);
    // Typed tokens are accepted too (an account moved from elsewhere).
    const put = await c.put(`/v1/accounts/${acct.id}`, { credentials: { oauth_access_token: 'forge_manual_token' } });
    expect(put.body.data.healthy).toBe(true);
  });

  it('actions and workflow steps get $auth too: /v1/actions/run and a workflow step; a step cannot take its account from trigger data', async () => {
    const forum = await startForum();
    try {
      const c = api(server.url, server.apiKey);
      const acct = (await c.post('/v1/accounts', { app: 'discourse', name: 'forum', credentials: { domain: forum.url, api_key: FORUM_KEY, api_username: 'system' } })).body.data;
      const ran = await c.post('/v1/actions/run', { component_code: DISCOURSE_LATEST, configured_props: { discourse: { authProvisionId: acct.id } } });
      expect(ran.status).toBe(200);
      expect(ran.body.data).toMatchObject({ ok: true, ret: ['Release notes', 'Welcome'], summary: '2 topics' });
      const missing = await c.post('/v1/actions/run', { component_code: DISCOURSE_LATEST, configured_props: {} });
      expect(missing.body.details.fields).toEqual({ 'configured_props.discourse': expect.stringMatching(/^is required/) });

      const wf = await c.post('/v1/workflows', {
        name: 'Forum digest', trigger: { type: 'manual' },
        steps: [{ name: 'latest', component_code: DISCOURSE_LATEST, configured_props: { discourse: { authProvisionId: acct.id } } }],
      });
      expect(wf.status).toBe(200);
      const run = (await c.post(`/v1/workflows/${wf.body.data.id}/run`, { event: {} })).body.data;
      expect(run.status).toBe('succeeded');
      expect(run.steps[0]).toMatchObject({ ret: ['Release notes', 'Welcome'], summary: '2 topics' });

      const fromTrigger = await c.post('/v1/workflows', {
        name: 'Chosen by the caller', trigger: { type: 'manual' },
        steps: [{ name: 'latest', component_code: DISCOURSE_LATEST, configured_props: { discourse: '{{steps.trigger.event.account}}' } }],
      });
      expect(fromTrigger.status).toBe(400);
      expect(fromTrigger.body.details.fields['steps[0].configured_props.discourse']).toMatch(/^must be \{"authProvisionId"/);
    } finally {
      forum.close();
    }
  });

  it('a registry-style polling source (app file, common base spread, propDefinition) emits each new forum topic once', async () => {
    const forum = await startForum();
    try {
      const c = api(server.url, server.apiKey);
      const acct = (await c.post('/v1/accounts', { app: 'discourse', name: 'community', credentials: { domain: forum.url, api_key: FORUM_KEY, api_username: 'system' } })).body.data;
      const src = await c.post('/v1/sources', { component_code: NEW_TOPICS, configured_props: { discourse: { authProvisionId: acct.id } } });
      expect(src.status).toBe(200);
      const id = src.body.data.id;
      const first = (await c.post(`/v1/sources/${id}/run`)).body.data;
      expect(first.ok).toBe(true);
      // With ts, one run's events are emitted oldest to newest.
      expect(first.emitted.map((e: any) => e.event.title)).toEqual(['Welcome', 'Release notes']);
      forum.topics.unshift({ id: 3, title: 'Roadmap', created_at: '2026-11-03T10:00:00Z' });
      const second = (await c.post(`/v1/sources/${id}/run`)).body.data;
      expect(second.emitted.map((e: any) => e.event.title)).toEqual(['Roadmap']);
      const summaries = (await c.get(`/v1/sources/${id}/event_summaries`, { expand: 'event' })).body.data;
      expect(summaries.map((e: any) => e.metadata.summary)).toEqual(['Roadmap', 'Release notes', 'Welcome']);
      expect(forum.refused).toBe(0);
    } finally {
      forum.close();
    }
  });

  it('a run whose connected account was deleted fails with an error naming the prop and the account, without running the code', async () => {
    const c = api(server.url, server.apiKey);
    const acct = (await c.post('/v1/accounts', { app: 'rocketchat', name: 'doomed', credentials: { url: rc.url, user_id: USER_ID, auth_token: TOKEN_2 } })).body.data;
    const src = (await c.post('/v1/sources', { component_code: ROCKETCHAT_ME, configured_props: { rocketchat: { authProvisionId: acct.id } } })).body.data;
    expect((await c.post(`/v1/sources/${src.id}/run`)).body.data.ok).toBe(true);
    const calls = rc.seen.length;
    expect((await c.del(`/v1/accounts/${acct.id}`)).status).toBe(200);
    expect((await c.get(`/v1/accounts/${acct.id}`)).status).toBe(404);
    const run = (await c.post(`/v1/sources/${src.id}/run`)).body.data;
    expect(run.ok).toBe(false);
    expect(run.error).toEqual({ name: 'ConnectedAccountError', message: expect.stringContaining(`prop "rocketchat": connected account ${acct.id} not found`) });
    expect(run.logs.at(-1).message).toContain(acct.id);
    expect(rc.seen.length).toBe(calls);
    // The failure is the source's last error, as for any failed run.
    const row = (await c.get(`/v1/sources/${src.id}`)).body.data;
    expect(JSON.stringify(row)).toContain(acct.id);
  });

  it('no credential is ever in clear text under the data dir (log, read models, WAL, keys, packages)', async () => {
    const secrets = [TOKEN_1, TOKEN_2, FORUM_KEY, 'ow_secret_key_123456', 'dk_1', provider.clientSecret, 'forge_manual_token', ...provider.issued];
    expect(provider.issued.length).toBeGreaterThanOrEqual(4);
    const scan = () => {
      const files = filesUnder(server.dataDir);
      expect(files.some((f) => f.endsWith('sluice.db'))).toBe(true);
      const found: string[] = [];
      let plainNames = 0;
      for (const f of files) {
        const bytes = readFileSync(f);
        for (const s of secrets) if (bytes.includes(Buffer.from(s, 'utf8'))) found.push(`${s} in ${f}`);
        // The scan sees clear text where there is some: an account's name is not secret.
        if (bytes.includes(Buffer.from('team chat (new token)', 'utf8'))) plainNames++;
      }
      expect(plainNames).toBeGreaterThan(0);
      return { files, found };
    };
    listedBeforeStop = (await api(server.url, server.apiKey).get('/v1/users/me/accounts')).body.data;
    // While running (the -wal holds the recent appends) and after a clean stop.
    const live = scan();
    expect(live.files.some((f) => f.endsWith('sluice.db-wal'))).toBe(true);
    expect(live.found).toEqual([]);
    await server.stop();
    expect(scan().found).toEqual([]);
  });

  it('rebuilds accounts and apps from the log, and runs still get their credentials', async () => {
    expect(listedBeforeStop.length).toBeGreaterThanOrEqual(5);
    await runAdmin(server.dataDir, ['rebuild']);
    server = await startSluice({ dataDir: server.dataDir, apiKey: server.apiKey, env: SERVER_ENV });
    const c = api(server.url, server.apiKey);
    expect((await c.get('/v1/users/me/accounts')).body.data).toEqual(listedBeforeStop);
    expect((await c.get('/v1/apps')).body.data.find((a: any) => a.name_slug === 'forge')).toMatchObject({ custom: true, oauth: { client_configured: true } });
    const acct = (listedBeforeStop as any[]).find((a) => a.name === 'team chat (new token)');
    const src = (await c.post('/v1/sources', { component_code: ROCKETCHAT_ME, configured_props: { rocketchat: { authProvisionId: acct.id } } })).body.data;
    expect((await c.post(`/v1/sources/${src.id}/run`)).body.data.ok).toBe(true);
    expect(rc.seen.at(-1)).toEqual({ userId: USER_ID, token: TOKEN_2 });
  });
});

describe('apps: the background refresher renews OAuth tokens before they expire', () => {
  const provider = new FakeOAuthProvider();
  let server: SluiceProcess;

  beforeAll(async () => {
    await provider.start();
    server = await startSluice({
      env: {
        // Renewals come at their refresh time; the sweep interval is only for retries.
        SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1', SLUICE_OAUTH_REFRESH_SWEEP_MS: '3600000',
        SLUICE_OAUTH_GITHUB_CLIENT_ID: 'Iv1.operator-client', SLUICE_OAUTH_GITHUB_CLIENT_SECRET: 'operator-secret',
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
    await provider.stop();
  });

  it('renews without any run, and the next run uses the renewed token', async () => {
    const c = api(server.url, server.apiKey);
    provider.expiresIn = 3;
    expect((await c.post('/v1/apps', {
      name_slug: 'forge', name: 'Forge', auth_type: 'oauth',
      oauth: { authorize_url: `${provider.url}/authorize`, token_url: `${provider.url}/token`, client_id: provider.clientId, client_secret: provider.clientSecret, scopes: 'repo' },
    })).status).toBe(200);
    const { body } = await connectOAuth(server, server.apiKey, 'forge', { name: 'bg' });
    const first = provider.issued[0];
    await eventually(() => provider.refreshesAccepted >= 1, 10_000, 'a background refresh');
    // Renewed before the first token expired (refresh time = expiry - a quarter of the lifetime).
    const renewed = provider.issued[2];
    const src = (await c.post('/v1/sources', { component_code: OAUTH_ME, configured_props: { forge: { authProvisionId: body.data.id }, api: provider.url } })).body.data;
    const run = (await c.post(`/v1/sources/${src.id}/run`)).body.data;
    expect(run.ok).toBe(true);
    const used = provider.apiTokens.at(-1);
    expect(used).not.toBe(first);
    expect(provider.issued.indexOf(used!)).toBeGreaterThanOrEqual(provider.issued.indexOf(renewed));
  });

  it('a catalog OAuth app uses the operator\'s client from the environment (the secret never shown)', async () => {
    const c = api(server.url, server.apiKey);
    const github = (await c.get('/v1/apps')).body.data.find((a: any) => a.name_slug === 'github');
    expect(github.oauth).toEqual({
      authorize_url: 'https://github.com/login/oauth/authorize', token_url: 'https://github.com/login/oauth/access_token',
      scopes: ['repo', 'read:user'], client_configured: true,
    });
    const start = await fetch(`${server.url}/v1/apps/github/oauth/start?name=work`, { headers: { authorization: `Bearer ${server.apiKey}` }, redirect: 'manual' });
    expect(start.status).toBe(302);
    const location = new URL(start.headers.get('location')!);
    expect(location.origin + location.pathname).toBe('https://github.com/login/oauth/authorize');
    expect(location.searchParams.get('client_id')).toBe('Iv1.operator-client');
    expect(start.headers.get('location')).not.toContain('operator-secret');
  });
});
