import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { bundleLocalComponent } from '../apps/cli/pd-client';
import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';
import { pdEnv, runPd } from './support/pd-cli';

const FIXTURES = resolve(__dirname, 'fixtures/registry/local_chat');
const TOKEN = 'tok-7f3a9c1e-registry-style-secret';
const USER_ID = 'u-42';

interface Message { id: string; user: string; text: string; ts: number }

/**
 * A self-hosted chat server's API on 127.0.0.1, as the registry's sources talk to: every request
 * must carry the connected account's user id and token, or it is a 401.
 */
class FakeChatApi {
  readonly seen: { path: string; userId?: string; token?: string }[] = [];
  readonly rooms = ['general', 'random', 'dev', 'design', 'ops'].map((name) => ({ id: `r-${name}`, name }));
  readonly messages: Message[] = [
    { id: 'm1', user: 'ana', text: 'first', ts: 1000 },
    { id: 'm2', user: 'bo', text: 'second', ts: 2000 },
    { id: 'm3', user: 'ana', text: 'third', ts: 3000 },
  ];
  version = '7.1.0';
  private server?: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', this.url);
    const userId = req.headers['x-user-id'] as string | undefined;
    const token = req.headers['x-auth-token'] as string | undefined;
    this.seen.push({ path: url.pathname, userId, token });
    const json = (status: number, body: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (userId !== USER_ID || token !== TOKEN) return json(401, { error: 'bad credentials' });
    const q = url.searchParams;
    if (url.pathname === '/api/v1/info') return json(200, { version: this.version });
    if (url.pathname === '/api/v1/rooms') {
      const query = q.get('query');
      const matching = this.rooms.filter((r) => !query || r.name.includes(query));
      const offset = Number(q.get('offset') ?? 0);
      return json(200, { rooms: matching.slice(offset, offset + Number(q.get('count') ?? 50)), total: matching.length });
    }
    const messages = /^\/api\/v1\/rooms\/r-general\/messages$/.exec(url.pathname);
    if (messages) return json(200, { messages: this.messages.filter((m) => m.ts > Number(q.get('since') ?? 0)) });
    json(404, { error: 'no such path' });
  }
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

type Client = ReturnType<typeof api>;

describe('issue 9: a registry-style integration (app file, common base, propDefinitions) with an API-key account', () => {
  let server: SluiceProcess;
  let c: Client;
  const chat = new FakeChatApi();
  let accountId: string;

  beforeAll(async () => {
    await chat.start();
    server = await startSluice({ env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
    c = api(server.url, server.apiKey);
    const app = await c.post('/v1/apps', {
      name_slug: 'local_chat', name: 'Local Chat', auth_type: 'keys',
      fields: [{ name: 'url', label: 'Server URL' }, { name: 'user_id', label: 'User id' }, { name: 'auth_token', label: 'Auth token', secret: true }],
    });
    expect(app.status).toBe(200);
    const account = await c.post('/v1/accounts', { app: 'local_chat', name: 'our chat', credentials: { url: chat.url, user_id: USER_ID, auth_token: TOKEN } });
    expect(account.status).toBe(200);
    expect(JSON.stringify(account.body)).not.toContain(TOKEN);
    accountId = account.body.data.id;
  });
  afterAll(async () => {
    await server?.stop();
    await chat.stop();
    if (server) removeDataDir(server.dataDir);
  });

  async function save(file: string): Promise<{ id: string; configurable_props: { name: string }[] }> {
    const r = await c.post('/v1/components', { component_code: await bundleLocalComponent(join(FIXTURES, file)) });
    expect(r.status).toBe(200);
    return r.body.data;
  }

  async function options(componentId: string, prop: string, body: Record<string, unknown>): Promise<{ options: unknown[]; context?: unknown }> {
    const r = await c.post(`/v1/components/${componentId}/props/${prop}/options`, body);
    expect(r.status).toBe(200);
    return r.body.data;
  }

  async function summaries(sourceId: string): Promise<{ event: Message }[]> {
    const r = await c.get(`/v1/sources/${sourceId}/event_summaries`, { expand: 'event', limit: '100' });
    expect(r.status).toBe(200);
    return r.body.data;
  }

  it('loads the room options from the API with the account\'s credentials, page by page and by search', async () => {
    const component = await save('sources/new-messages.mjs');
    expect(component.configurable_props.map((p) => p.name)).toEqual(expect.arrayContaining(['app', 'room', 'timer']));
    const app = { authProvisionId: accountId };
    expect(await options(component.id, 'room', { configured_props: { app }, page: 0 })).toMatchObject({
      options: [{ label: '#general', value: 'r-general' }, { label: '#random', value: 'r-random' }],
    });
    expect((await options(component.id, 'room', { configured_props: { app }, page: 2 })).options).toEqual([{ label: '#ops', value: 'r-ops' }]);
    expect((await options(component.id, 'room', { configured_props: { app }, page: 0, query: 'de' })).options.map((o) => (o as { value: string }).value))
      .toEqual(['r-dev', 'r-design']);
    const seen = chat.seen.filter((s) => s.path === '/api/v1/rooms');
    expect(seen.length).toBe(3);
    expect(seen.every((s) => s.token === TOKEN && s.userId === USER_ID)).toBe(true);
  });

  it('deploys the polling source: the deploy hook emits the history, a run emits only what is new, deduped by id', async () => {
    const component = await save('sources/new-messages.mjs');
    const deployed = await c.post('/v1/sources', {
      component_id: component.id, name: 'general messages', configured_props: { app: { authProvisionId: accountId }, room: 'r-general' },
    });
    expect(deployed.status).toBe(200);
    const id = deployed.body.data.id;
    expect(JSON.stringify(deployed.body)).not.toContain(TOKEN);
    expect((await summaries(id)).map((e) => e.event.id).sort()).toEqual(['m2', 'm3']);

    chat.messages.push({ id: 'm4', user: 'bo', text: 'fourth', ts: 4000 });
    const run = await c.post(`/v1/sources/${id}/run`, {});
    expect(run.status).toBe(200);
    expect((await summaries(id)).map((e) => e.event.id).sort()).toEqual(['m2', 'm3', 'm4']);
    // A run that finds nothing new emits nothing.
    await c.post(`/v1/sources/${id}/run`, {});
    expect((await summaries(id)).length).toBe(3);
  });

  it('a second source spreading the same base polls the server status with the same account', async () => {
    const component = await save('sources/server-status.mjs');
    expect(component.configurable_props.map((p) => p.name)).not.toContain('room');
    const deployed = await c.post('/v1/sources', { component_id: component.id, configured_props: { app: { authProvisionId: accountId } } });
    expect(deployed.status).toBe(200);
    const id = deployed.body.data.id;
    await c.post(`/v1/sources/${id}/run`, {});
    await c.post(`/v1/sources/${id}/run`, {});
    chat.version = '7.2.0';
    await c.post(`/v1/sources/${id}/run`, {});
    expect((await summaries(id)).map((e) => (e.event as unknown as { version: string }).version).sort()).toEqual(['7.1.0', '7.2.0']);
  });

  it('pd lists the connected account (a table for people, JSON for scripts), never its credentials', async () => {
    const env = pdEnv({ SLUICE_URL: server.url, SLUICE_API_KEY: server.apiKey });
    const table = await runPd(['list', 'accounts'], env);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`${accountId}\\s+local_chat\\s+our chat\\s+yes`));
    const json = await runPd(['list', 'accounts', '--json'], env);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ id: accountId, app: 'local_chat', name: 'our chat', healthy: true })]);
    expect(table.stdout + json.stdout).not.toContain(TOKEN);
  });

  it('never writes the token in clear text under the data directory (every file, the WAL included)', async () => {
    const needle = Buffer.from(TOKEN);
    const holding = filesUnder(server.dataDir).filter((f) => readFileSync(f).includes(needle));
    expect(holding).toEqual([]);
    // The scan can see a token where one is written: the fake API's log of what it received has it.
    expect(chat.seen.some((s) => s.token === TOKEN)).toBe(true);
  });

  it('a run whose account was deleted fails with an error that names the account', async () => {
    const component = await save('sources/server-status.mjs');
    const deployed = await c.post('/v1/sources', { component_id: component.id, name: 'status, then gone', configured_props: { app: { authProvisionId: accountId } } });
    expect(deployed.status).toBe(200);
    expect((await c.del(`/v1/accounts/${accountId}`)).status).toBe(200);
    const run = await c.post(`/v1/sources/${deployed.body.data.id}/run`, {});
    expect(JSON.stringify(run.body)).toContain(accountId);
    const logs = await c.get(`/v1/sources/${deployed.body.data.id}/logs`);
    expect(JSON.stringify(logs.body)).toContain(accountId);
  });
});
