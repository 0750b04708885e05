import { createServer, IncomingMessage, Server } from 'node:http';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { api, eventually, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';

type Client = ReturnType<typeof api>;
type Summary = { id: string; event: any; metadata: { id: string; summary: string; name: string } };

const BUILTIN_KEYS = [
  'sluice-cron-schedule', 'sluice-custom-http-response', 'sluice-end-workflow', 'sluice-feed-poller', 'sluice-format-date',
  'sluice-format-text', 'sluice-http-request', 'sluice-http-webhook', 'sluice-http-webhook-custom-response', 'sluice-http-webhook-payload-only',
  'sluice-interval-schedule', 'sluice-json-api-poller', 'sluice-parse-json', 'sluice-stringify-json', 'sluice-transform-array',
  'sluice-url-watcher',
];

/** The third parties of the built-ins, on 127.0.0.1: feeds, a page that changes, a JSON API paged by cursor. */
class Fixtures {
  rss = [
    { guid: 'rss-1', title: 'First post', date: 'Mon, 02 Nov 2026 10:00:00 GMT' },
    { guid: 'rss-2', title: 'Second post', date: 'Tue, 03 Nov 2026 10:00:00 GMT' },
    { guid: 'rss-3', title: 'Third post', date: 'Wed, 04 Nov 2026 10:00:00 GMT' },
  ];
  jsonItems: Record<string, unknown>[] = [
    { id: 'j1', url: '/j/1', title: 'Json one', content_text: 'one', date_published: '2026-11-01T08:00:00Z', authors: [{ name: 'Bob' }] },
    { id: 'j2', url: '/j/2', content_html: '<p>two</p>', date_published: '2026-11-02T08:00:00Z' },
  ];
  watched = { status: 200, body: '<h1>version 1</h1>' };
  /** Pages of the JSON API by cursor ('' = first page). */
  pages: Record<string, { items: { id: number; name: string }[]; next: string | null }> = {
    '': { items: [{ id: 1, name: 'one' }, { id: 2, name: 'two' }], next: 'p2' },
    p2: { items: [{ id: 3, name: 'three' }], next: null },
  };
  apiRequests: { cursor: string | null; auth: string | undefined; client?: string }[] = [];
  server!: Server;
  base = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<unknown> {
    return new Promise((r) => this.server.close(r));
  }

  private handle(req: IncomingMessage, res: import('node:http').ServerResponse): void {
    const u = new URL(req.url!, this.base);
    if (u.pathname === '/feed.rss') {
      const items = this.rss.map((i) => `<item><title>${i.title}</title><link>${this.base}/posts/${i.guid}</link><guid isPermaLink="false">${i.guid}</guid><pubDate>${i.date}</pubDate><description><![CDATA[<p>${i.title} body</p>]]></description></item>`);
      res.writeHead(200, { 'content-type': 'application/rss+xml' }).end(`<?xml version="1.0"?><rss version="2.0"><channel><title>RSS Fixture</title><link>${this.base}/</link>${items.join('')}</channel></rss>`);
    } else if (u.pathname === '/feed.atom') {
      res.writeHead(200, { 'content-type': 'application/atom+xml' }).end(`<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom Fixture</title><link href="${this.base}/atom"/><id>urn:fixture</id><updated>2026-11-05T00:00:00Z</updated>
<entry><title type="text">Atom one</title><link rel="alternate" href="${this.base}/a/1"/><id>urn:atom:1</id><updated>2026-11-01T00:00:00Z</updated><summary>first</summary><author><name>Ada</name></author></entry>
<entry><title type="html">Atom two</title><link rel="alternate" href="${this.base}/a/2"/><link rel="edit" href="${this.base}/edit/2"/><id>urn:atom:2</id><published>2026-11-02T00:00:00Z</published><content type="html">second</content></entry>
</feed>`);
    } else if (u.pathname === '/feed.json') {
      res.writeHead(200, { 'content-type': 'application/feed+json' }).end(JSON.stringify({
        version: 'https://jsonfeed.org/version/1.1', title: 'JSON Fixture', home_page_url: `${this.base}/json`,
        items: this.jsonItems.map((i) => ({ ...i, url: `${this.base}${i.url}` })),
      }));
    } else if (u.pathname === '/watched') {
      res.writeHead(this.watched.status, { 'content-type': 'text/html' }).end(this.watched.body);
    } else if (u.pathname === '/api/items') {
      const cursor = u.searchParams.get('cursor');
      this.apiRequests.push({ cursor, auth: req.headers.authorization, client: req.headers['x-client'] as string | undefined });
      const page = this.pages[cursor ?? ''];
      if (!page) res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"bad cursor"}');
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: { results: page.items }, meta: { next: page.next } }));
    } else {
      res.writeHead(404).end();
    }
  }
}

/** `eventually` for a value that must be found (its result typed without undefined). */
async function eventuallyFound<T>(fn: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  return (await eventually(fn, timeoutMs, what)) as T;
}

async function summaries(c: Client, sourceId: string, limit = 100): Promise<Summary[]> {
  return (await c.get(`/v1/sources/${sourceId}/event_summaries`, { expand: 'event', limit: String(limit) })).body.data;
}

async function deploy(c: Client, body: Record<string, unknown>): Promise<any> {
  const r = await c.post('/v1/sources', body);
  if (r.status !== 200) throw new Error(`deploy ${JSON.stringify(body)}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data;
}

async function runAction(c: Client, key: string, props: Record<string, unknown>): Promise<{ status: number; body: any }> {
  return c.post('/v1/actions/run', { key, configured_props: props });
}

describe('the built-in registry: every component deployed and run against local fixtures', () => {
  let server: SluiceProcess;
  let alice: Client;
  let bob: Client;
  const fx = new Fixtures();
  let aliceHook: { id: string; component_id: string; endpoint_url: string } | undefined;

  beforeAll(async () => {
    await fx.start();
    const dir = newDataDir();
    await runAdmin(dir, ['create-account', '--name', 'alice', '--key', 'sk_alice_registry_0123456789']);
    const second = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'bob']));
    server = await startSluice({ dataDir: dir, apiKey: 'sk_alice_registry_0123456789', env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
    alice = api(server.url, server.apiKey);
    bob = api(server.url, second.api_key);
  });
  afterAll(async () => {
    await server?.stop();
    await fx.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('the registry lists every built-in with a spec key and a semantic version; search and registry/{key} find them', async () => {
    const listed = await alice.get('/v1/components/registry');
    expect(listed.status).toBe(200);
    const data = listed.body.data as { key: string; version: string; name: string; type: string; builtin: boolean; component_id: string | null }[];
    expect(data.map((d) => d.key)).toEqual(BUILTIN_KEYS);
    for (const d of data) {
      expect(d).toMatchObject({ builtin: true, component_id: null });
      expect(d.version).toMatch(/^\d+\.\d+\.\d+$/);
      // spec 2.4: <app_name_slug>-<slugified-component-name>
      expect(d.key).toBe(`sluice-${d.name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`);
    }

    expect((await alice.get('/v1/components/search', { query: 'FEED' })).body).toEqual({ sources: ['sluice-feed-poller'], actions: [] });
    expect((await alice.get('/v1/components/search', { query: 'json' })).body).toEqual({
      sources: ['sluice-feed-poller', 'sluice-http-webhook-payload-only', 'sluice-json-api-poller'], actions: ['sluice-http-request', 'sluice-parse-json', 'sluice-stringify-json'],
    });
    const all = (await bob.get('/v1/components/search')).body;
    expect([...all.sources, ...all.actions].sort()).toEqual(BUILTIN_KEYS);

    const one = await alice.get('/v1/components/registry/sluice-json-api-poller');
    expect(one.status).toBe(200);
    expect(one.body.data).toMatchObject({ id: null, builtin: true, key: 'sluice-json-api-poller', version: '1.0.0', type: 'source', code_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(one.body.data.configurable_props.map((p: { name: string }) => p.name)).toEqual(
      ['url', 'itemsPath', 'idPath', 'cursorPath', 'cursorParam', 'headers', 'authorization', 'maxPages', 'timer', 'db'],
    );
    expect(one.body.data.configurable_props.find((p: { name: string }) => p.name === 'authorization')).toMatchObject({ secret: true, optional: true });
    // The code an account gets is the component with its shared files inlined, packages left as imports.
    expect((await alice.get('/v1/components/registry/sluice-feed-poller')).body.data.code).toContain('from "fast-xml-parser@5.12.1"');
    expect((await alice.get('/v1/components/registry/sluice-no-such-thing')).status).toBe(404);
  });

  it('HTTP webhook: the full request, the payload only, and a configured custom response', async () => {
    const full = await deploy(alice, { key: 'sluice-http-webhook' });
    const payload = await deploy(alice, { key: 'sluice-http-webhook-payload-only' });
    const custom = await deploy(alice, {
      key: 'sluice-http-webhook-custom-response',
      configured_props: { responseStatus: 202, responseContentType: 'text/plain', responseBody: 'queued, thanks', bodyOnly: true },
    });
    for (const src of [full, payload, custom]) expect(src.endpoint_url).toMatch(/\/e\//);

    const sent = { order: 42, items: ['a', 'b'] };
    const post = (url: string) => fetch(`${url}/orders/new?via=test`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-caller': 'fixture' }, body: JSON.stringify(sent) });
    expect((await post(full.endpoint_url)).status).toBe(200);
    expect((await post(payload.endpoint_url)).status).toBe(200);
    const answered = await post(custom.endpoint_url);
    expect(answered.status).toBe(202);
    expect(answered.headers.get('content-type')).toContain('text/plain');
    expect(await answered.text()).toBe('queued, thanks');

    const [fullEvent] = await eventuallyFound(async () => {
      const s = await summaries(alice, full.id);
      return s.length === 1 ? s : undefined;
    }, 20_000, 'the full request emitted');
    expect(fullEvent.event).toMatchObject({ method: 'POST', path: '/orders/new', query: { via: 'test' }, body: sent, bodyRaw: JSON.stringify(sent) });
    expect(fullEvent.event.headers['x-caller']).toBe('fixture');
    expect(fullEvent.metadata.summary).toBe('POST /orders/new');
    const [payloadEvent] = await eventuallyFound(async () => {
      const s = await summaries(alice, payload.id);
      return s.length === 1 ? s : undefined;
    }, 20_000, 'the payload emitted');
    expect(payloadEvent.event).toEqual(sent);
    const customEvents = await summaries(alice, custom.id);
    expect(customEvents.map((e) => e.event)).toEqual([sent]);

    // Plain text reaches the payload-only source as the raw text.
    await fetch(payload.endpoint_url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'just text' });
    const texts = await eventuallyFound(async () => {
      const s = await summaries(alice, payload.id);
      return s.length === 2 ? s : undefined;
    }, 20_000, 'the text payload emitted');
    expect(texts[0].event).toBe('just text');
    // A status outside 100..599 is refused at deploy, naming the prop.
    const bad = await alice.post('/v1/sources', { key: 'sluice-http-webhook-custom-response', configured_props: { responseStatus: 99 } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body.details)).toContain('responseStatus');
  });

  it('interval and cron schedules fire on the configured timer', async () => {
    const interval = await deploy(alice, { key: 'sluice-interval-schedule', configured_props: { timer: { intervalSeconds: 1 } } });
    const cron = await deploy(alice, { key: 'sluice-cron-schedule', configured_props: { timer: { cron: '* * * * * *', timezone: 'Europe/Paris' } } });
    expect(interval.configured_props.timer).toEqual({ cron: null, interval_seconds: 1, timezone: null });
    expect(cron.configured_props.timer).toEqual({ cron: '* * * * * *', interval_seconds: null, timezone: 'Europe/Paris' });
    const ticks = await eventuallyFound(async () => {
      const s = await summaries(alice, interval.id);
      return s.length >= 2 ? s : undefined;
    }, 20_000, 'two interval ticks');
    expect(ticks[0].event).toEqual({ timestamp: expect.any(Number), interval_seconds: 1 });
    expect(ticks[0].event.timestamp).toBeGreaterThan(ticks[1].event.timestamp);
    const fires = await eventuallyFound(async () => {
      const s = await summaries(alice, cron.id);
      return s.length >= 2 ? s : undefined;
    }, 20_000, 'two cron fires');
    expect(fires[0].event).toEqual({ timestamp: expect.any(Number), cron: '* * * * * *' });
    expect(fires[0].metadata.summary).toMatch(/^Fired at \d{4}-/);
    // Defaults come from the component: an hourly cron.
    const hourly = await deploy(alice, { key: 'sluice-cron-schedule' });
    expect(hourly.configured_props.timer).toMatchObject({ cron: '0 * * * *' });
    for (const s of [interval, cron, hourly]) expect((await alice.del(`/v1/sources/${s.id}`)).status).toBeLessThan(300);
  });

  it('feed poller: RSS history on deploy, then only new items; Atom and JSON Feed items normalised', async () => {
    const rss = await deploy(alice, { key: 'sluice-feed-poller', configured_props: { url: `${fx.base}/feed.rss`, historyCount: 2 } });
    const history = await summaries(alice, rss.id);
    // The two newest of three, newest first; the older one is not news later either.
    expect(history.map((e) => e.metadata.id)).toEqual(['rss-3', 'rss-2']);
    expect(history[0].event).toMatchObject({
      id: 'rss-3', title: 'Third post', link: `${fx.base}/posts/rss-3`, published: '2026-11-04T10:00:00.000Z', summary: '<p>Third post body</p>',
      feed: { title: 'RSS Fixture', link: `${fx.base}/` },
    });

    let run = await alice.post(`/v1/sources/${rss.id}/run`);
    expect(run.body.data).toMatchObject({ ok: true, emitted: [] });
    fx.rss.push({ guid: 'rss-4', title: 'Fourth post', date: 'Thu, 05 Nov 2026 10:00:00 GMT' });
    run = await alice.post(`/v1/sources/${rss.id}/run`);
    expect(run.body.data.ok).toBe(true);
    expect(run.body.data.emitted.map((e: { event: { id: string } }) => e.event.id)).toEqual(['rss-4']);
    run = await alice.post(`/v1/sources/${rss.id}/run`);
    expect(run.body.data.emitted).toEqual([]);
    expect((await summaries(alice, rss.id)).map((e) => e.metadata.id)).toEqual(['rss-4', 'rss-3', 'rss-2']);

    const atom = await deploy(alice, { key: 'sluice-feed-poller', configured_props: { url: `${fx.base}/feed.atom` } });
    const atomItems = await summaries(alice, atom.id);
    expect(atomItems.map((e) => e.event)).toEqual([
      { id: 'urn:atom:2', title: 'Atom two', link: `${fx.base}/a/2`, published: '2026-11-02T00:00:00.000Z', summary: 'second', author: null, feed: { title: 'Atom Fixture', link: `${fx.base}/atom` } },
      { id: 'urn:atom:1', title: 'Atom one', link: `${fx.base}/a/1`, published: '2026-11-01T00:00:00.000Z', summary: 'first', author: 'Ada', feed: { title: 'Atom Fixture', link: `${fx.base}/atom` } },
    ]);

    const json = await deploy(alice, { key: 'sluice-feed-poller', configured_props: { url: `${fx.base}/feed.json` } });
    expect((await summaries(alice, json.id)).map((e) => e.event)).toEqual([
      { id: 'j2', title: null, link: `${fx.base}/j/2`, published: '2026-11-02T08:00:00.000Z', summary: '<p>two</p>', author: null, feed: { title: 'JSON Fixture', link: `${fx.base}/json` } },
      { id: 'j1', title: 'Json one', link: `${fx.base}/j/1`, published: '2026-11-01T08:00:00.000Z', summary: 'one', author: 'Bob', feed: { title: 'JSON Fixture', link: `${fx.base}/json` } },
    ]);

    // No history: what the feed holds at deploy is never emitted, only what comes after.
    const quiet = await deploy(alice, { key: 'sluice-feed-poller', configured_props: { url: `${fx.base}/feed.json`, historyCount: 0 } });
    expect(await summaries(alice, quiet.id)).toEqual([]);
    expect((await alice.post(`/v1/sources/${quiet.id}/run`)).body.data.emitted).toEqual([]);
    fx.jsonItems.push({ id: 'j3', url: '/j/3', title: 'Json three', date_published: '2026-11-03T08:00:00Z' });
    run = await alice.post(`/v1/sources/${quiet.id}/run`);
    expect(run.body.data.emitted.map((e: { event: { id: string } }) => e.event.id)).toEqual(['j3']);

    // Something that is not a feed fails the deploy's history with why.
    const notFeed = await alice.post('/v1/sources', { key: 'sluice-feed-poller', configured_props: { url: `${fx.base}/watched` } });
    expect(notFeed.status).toBe(400);
    expect(JSON.stringify(notFeed.body)).toContain('not an RSS, Atom or JSON feed');
  });

  it('URL watcher: nothing at deploy or while the body stays the same, one event per change, an error answer fails the poll', async () => {
    const src = await deploy(alice, { key: 'sluice-url-watcher', configured_props: { url: `${fx.base}/watched` } });
    expect(await summaries(alice, src.id)).toEqual([]);
    let run = await alice.post(`/v1/sources/${src.id}/run`);
    expect(run.body.data).toMatchObject({ ok: true, emitted: [] });

    fx.watched.body = '<h1>version 2</h1>';
    run = await alice.post(`/v1/sources/${src.id}/run`);
    expect(run.body.data.emitted).toHaveLength(1);
    const changed = run.body.data.emitted[0].event;
    expect(changed).toMatchObject({ url: `${fx.base}/watched`, status: 200, body: '<h1>version 2</h1>', bodyTruncated: false, hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(changed.previousHash).toMatch(/^[0-9a-f]{64}$/);
    expect(changed.previousHash).not.toBe(changed.hash);
    run = await alice.post(`/v1/sources/${src.id}/run`);
    expect(run.body.data.emitted).toEqual([]);

    fx.watched.status = 503;
    run = await alice.post(`/v1/sources/${src.id}/run`);
    expect(run.body.data.ok).toBe(false);
    expect(JSON.stringify(run.body.data)).toContain('answered HTTP 503');
    // Back to the first version: a change again (not hidden by dedupe), and the error was not one.
    fx.watched = { status: 200, body: '<h1>version 1</h1>' };
    run = await alice.post(`/v1/sources/${src.id}/run`);
    expect(run.body.data.emitted.map((e: { event: { body: string } }) => e.event.body)).toEqual(['<h1>version 1</h1>']);
    expect(run.body.data.emitted[0].event.previousHash).toBe(changed.hash);
    expect((await summaries(alice, src.id)).filter((e) => e.metadata.name === '').map((e) => e.event.body)).toEqual(['<h1>version 1</h1>', '<h1>version 2</h1>']);
  });

  it('JSON API poller: follows cursors, keeps the last one between polls, emits each item once', async () => {
    const src = await deploy(alice, {
      key: 'sluice-json-api-poller',
      configured_props: { url: `${fx.base}/api/items`, itemsPath: 'data.results', cursorPath: 'meta.next', headers: { 'x-client': 'sluice' }, authorization: 'Bearer fixture' },
    });
    // The secret header is stored encrypted and never shown back.
    expect(src.configured_props.authorization).toBeUndefined();
    expect(JSON.stringify((await alice.get(`/v1/sources/${src.id}`)).body)).not.toContain('Bearer fixture');
    const files = (readdirSync(server.dataDir, { recursive: true }) as string[]).map((f) => join(server.dataDir, f)).filter((f) => statSync(f).isFile());
    expect(files.filter((f) => readFileSync(f).includes('Bearer fixture'))).toEqual([]);
    let run = await alice.post(`/v1/sources/${src.id}/run`);
    expect(run.body.data.ok).toBe(true);
    expect(run.body.data.emitted.map((e: { event: { id: number } }) => e.event.id)).toEqual([1, 2, 3]);
    expect(fx.apiRequests).toEqual([{ cursor: null, auth: 'Bearer fixture', client: 'sluice' }, { cursor: 'p2', auth: 'Bearer fixture', client: 'sluice' }]);

    // Nothing new: the poll starts at the stored cursor and emits nothing.
    fx.apiRequests.length = 0;
    run = await alice.post(`/v1/sources/${src.id}/run`);
    expect(run.body.data.emitted).toEqual([]);
    expect(fx.apiRequests.map((r) => r.cursor)).toEqual(['p2']);

    // The last page grows and gets a next page: only the new items.
    fx.pages.p2 = { items: [{ id: 3, name: 'three' }, { id: 4, name: 'four' }], next: 'p3' };
    fx.pages.p3 = { items: [{ id: 5, name: 'five' }], next: null };
    fx.apiRequests.length = 0;
    run = await alice.post(`/v1/sources/${src.id}/run`);
    expect(run.body.data.emitted.map((e: { event: { id: number } }) => e.event)).toEqual([{ id: 4, name: 'four' }, { id: 5, name: 'five' }]);
    expect(fx.apiRequests.map((r) => r.cursor)).toEqual(['p2', 'p3']);
    expect((await summaries(alice, src.id)).map((e) => e.metadata.id)).toEqual(['5', '4', '3', '2', '1']);

    // A wrong path to the items fails the poll, saying where it looked.
    const wrong = await deploy(alice, { key: 'sluice-json-api-poller', configured_props: { url: `${fx.base}/api/items`, itemsPath: 'items' } });
    run = await alice.post(`/v1/sources/${wrong.id}/run`);
    expect(run.body.data.ok).toBe(false);
    expect(JSON.stringify(run.body.data)).toContain('no array of items at \\"items\\"');
  });

  it('data transformation actions run by key through POST /v1/actions/run', async () => {
    const expectRet = async (key: string, props: Record<string, unknown>, ret: unknown) => {
      const r = await runAction(alice, key, props);
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ ok: true });
      expect(r.body.data.ret).toEqual(ret);
      return r.body.data;
    };
    const upper = await expectRet('sluice-format-text', { text: 'hello world', operation: 'upper' }, 'HELLO WORLD');
    expect(upper.summary).toBe('Formatted text (upper)');
    await expectRet('sluice-format-text', { text: 'élan vital-force', operation: 'title' }, 'Élan Vital-Force');
    await expectRet('sluice-format-text', { text: '  Déjà  Vu: The Sequel! ', operation: 'slugify' }, 'deja-vu-the-sequel');
    await expectRet('sluice-format-text', { text: 'abcdefghij', operation: 'truncate', maxLength: 5 }, 'abcd…');
    await expectRet('sluice-format-text', { text: ' a \n\t b ', operation: 'collapse_whitespace' }, 'a b');
    const badOption = await runAction(alice, 'sluice-format-text', { text: 'x', operation: 'shout' });
    expect(badOption.status).toBe(400);
    expect(JSON.stringify(badOption.body.details)).toContain('operation');

    await expectRet('sluice-parse-json', { text: '{"a":[1,2,{"b":null}]}' }, { a: [1, 2, { b: null }] });
    const badJson = await runAction(alice, 'sluice-parse-json', { text: '{nope' });
    expect(badJson.body.data.ok).toBe(false);
    expect(JSON.stringify(badJson.body.data.os)).toContain('the text is not valid JSON');
    await expectRet('sluice-stringify-json', { value: { a: 1, b: [true] } }, '{"a":1,"b":[true]}');
    await expectRet('sluice-stringify-json', { value: [1], indent: 2 }, '[\n  1\n]');

    await expectRet('sluice-format-date', { date: '2026-11-23T14:05:09Z', format: 'datetime', timezone: 'Europe/Paris' }, '2026-11-23 15:05:09');
    await expectRet('sluice-format-date', { date: '1795442400', format: 'iso' }, new Date(1795442400 * 1000).toISOString());
    await expectRet('sluice-format-date', { date: 'Mon, 23 Nov 2026 14:00:00 GMT', format: 'epoch_s', addSeconds: -3600 }, Date.UTC(2026, 10, 23, 13) / 1000);
    await expectRet('sluice-format-date', { date: '2026-07-01T00:30:00Z', format: 'date', timezone: 'America/New_York' }, '2026-06-30');
    await expectRet('sluice-format-date', { date: '2026-11-23T14:00:00Z', format: 'http' }, 'Mon, 23 Nov 2026 14:00:00 GMT');
    const badZone = await runAction(alice, 'sluice-format-date', { date: '2026-11-23', format: 'date', timezone: 'Mars/Olympus' });
    expect(JSON.stringify(badZone.body.data.os)).toContain('\\"Mars/Olympus\\" is not a time zone');

    const people = [{ n: 'bo', age: 40 }, { n: 'al', age: 30 }, { n: 'bo', age: 41 }];
    await expectRet('sluice-transform-array', { array: people, operation: 'sort', path: 'age', descending: true }, [people[2], people[0], people[1]]);
    await expectRet('sluice-transform-array', { array: people, operation: 'unique', path: 'n' }, [people[0], people[1]]);
    await expectRet('sluice-transform-array', { array: people, operation: 'pluck', path: 'n' }, ['bo', 'al', 'bo']);
    await expectRet('sluice-transform-array', { array: [1, 2, 3, 4, 5], operation: 'chunk', size: 2 }, [[1, 2], [3, 4], [5]]);
    await expectRet('sluice-transform-array', { array: '[[1],[2,[3]]]', operation: 'flatten' }, [1, 2, [3]]);
    await expectRet('sluice-transform-array', { array: ['a', 'b'], operation: 'join', separator: '|' }, 'a|b');
    await expectRet('sluice-transform-array', { array: [0, null, '', 'x', false], operation: 'compact' }, [0, 'x']);
    await expectRet('sluice-transform-array', { array: [1, 2, 3], operation: 'last', size: 2 }, [2, 3]);
    const notArray = await runAction(alice, 'sluice-transform-array', { array: { a: 1 }, operation: 'length' });
    expect(JSON.stringify(notArray.body.data.os)).toContain('array must be an array, got object');

    // End Workflow through actions/run: the exit is reported.
    const exit = await runAction(alice, 'sluice-end-workflow', { reason: 'nothing to do' });
    expect(exit.body.data).toMatchObject({ ok: true, flow_exit: { reason: 'nothing to do' } });
  });

  it('custom HTTP response and end workflow as steps of an HTTP workflow, with transformations between them', async () => {
    const created = await alice.post('/v1/workflows', {
      name: 'Built-in steps',
      trigger: { type: 'http', custom_response: true },
      steps: [
        { name: 'parse', key: 'sluice-parse-json', configured_props: { text: '{{steps.trigger.event.body.json}}' } },
        { name: 'names', key: 'sluice-transform-array', configured_props: { array: '{{steps.parse.$return_value.people}}', operation: 'pluck', path: 'name' } },
        { name: 'joined', key: 'sluice-transform-array', configured_props: { array: '{{steps.names.$return_value}}', operation: 'join', separator: ' & ' } },
        { name: 'shout', key: 'sluice-format-text@1.0.0', configured_props: { text: '{{steps.joined.$return_value}}', operation: 'upper' } },
        { name: 'reply', key: 'sluice-custom-http-response', configured_props: { status: 201, headers: { 'x-built-in': 'yes' }, body: { greeting: 'hi {{steps.shout.$return_value}}' } } },
        { name: 'stop', key: 'sluice-end-workflow', configured_props: { reason: 'answered' } },
        { name: 'never', key: 'sluice-format-text', configured_props: { text: 'x', operation: 'upper' } },
      ],
    });
    expect(created.status).toBe(200);
    const wf = created.body.data;
    const answer = await fetch(wf.trigger.endpoint_url, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ json: JSON.stringify({ people: [{ name: 'ada' }, { name: 'bob' }] }) }),
    });
    expect(answer.status).toBe(201);
    expect(answer.headers.get('x-built-in')).toBe('yes');
    expect(await answer.json()).toEqual({ greeting: 'hi ADA & BOB' });
    const [run] = await eventuallyFound(async () => {
      const runs = (await alice.get(`/v1/workflows/${wf.id}/runs`)).body.data as { status: string }[];
      return runs.length === 1 && runs[0].status !== 'running' ? runs : undefined;
    }, 20_000, 'the run ended') as unknown as { status: string; exit_reason: string; steps: { name: string; status: string }[] }[];
    expect(run).toMatchObject({ status: 'exited', exit_reason: 'answered' });
    expect(run.steps.map((s) => s.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'skipped']);

    const unknownVersion = await alice.post('/v1/workflows', {
      name: 'Bad version', trigger: { type: 'manual' }, steps: [{ name: 'a', key: 'sluice-format-text@9.9.9', configured_props: { text: 'x', operation: 'upper' } }],
    });
    expect(unknownVersion.status).toBe(404);
    expect(unknownVersion.body.details).toEqual({ fields: { 'steps[0].key': 'not found' } });
  });

  it('every account deploys a built-in into its own namespace; an account\'s own published key hides the built-in for that account only', async () => {
    // Concurrent first uses by one account share one saved copy.
    const together = await Promise.all([1, 2, 3].map((i) => runAction(bob, 'sluice-stringify-json', { value: [i] })));
    expect(together.map((r) => r.body.data.ret)).toEqual(['[1]', '[2]', '[3]']);
    expect(new Set(together.map((r) => r.body.data.component_id)).size).toBe(1);

    const a1 = await deploy(alice, { key: 'sluice-http-webhook', name: 'alice hook' });
    const a2 = await deploy(alice, { key: 'sluice-http-webhook@1.0.0', name: 'alice hook 2' });
    const b1 = await deploy(bob, { key: 'sluice-http-webhook', name: 'bob hook' });
    // One saved copy per account (reused by the account's later deploys), never shared.
    expect(a2.component_id).toBe(a1.component_id);
    expect(b1.component_id).not.toBe(a1.component_id);
    expect((await bob.get(`/v1/components/${b1.component_id}`)).body.data).toMatchObject({ key: 'sluice-http-webhook', version: '1.0.0' });
    expect((await bob.get(`/v1/components/${a1.component_id}`)).status).toBe(404);
    expect((await alice.get(`/v1/components/${a1.component_id}`)).body.data.code_hash)
      .toBe((await bob.get(`/v1/components/${b1.component_id}`)).body.data.code_hash);
    await fetch(b1.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"who":"bob"}' });
    const bobEvents = await eventuallyFound(async () => {
      const s = await summaries(bob, b1.id);
      return s.length === 1 ? s : undefined;
    }, 20_000, 'bob\'s event');
    expect(bobEvents[0].event.body).toEqual({ who: 'bob' });
    expect(await summaries(alice, a1.id)).toEqual([]);

    const own = `export default { key: "sluice-format-text", name: "My Format Text", version: "2.0.0", type: "action",
      props: { text: { type: "string" } }, async run() { return "mine: " + this.text; } };`;
    const published = await alice.post('/v1/components', { component_code: own, publish: true });
    expect(published.status).toBe(200);
    const aliceEntry = (await alice.get('/v1/components/registry')).body.data.find((d: { key: string }) => d.key === 'sluice-format-text');
    expect(aliceEntry).toMatchObject({ version: '2.0.0', builtin: false, component_id: published.body.data.id, name: 'My Format Text' });
    expect((await alice.get('/v1/components/registry/sluice-format-text')).body.data).toMatchObject({ builtin: false, version: '2.0.0' });
    expect((await runAction(alice, 'sluice-format-text', { text: 'x' })).body.data.ret).toBe('mine: x');
    // The built-in stays reachable by its version; bob still sees the built-in.
    expect((await runAction(alice, 'sluice-format-text@1.0.0', { text: 'x', operation: 'upper' })).body.data.ret).toBe('X');
    expect((await bob.get('/v1/components/registry')).body.data.find((d: { key: string }) => d.key === 'sluice-format-text')).toMatchObject({ version: '1.0.0', builtin: true });
    expect((await runAction(bob, 'sluice-format-text', { text: 'x', operation: 'lower' })).body.data.ret).toBe('x');

    aliceHook = a1;

    // An unknown key under the built-ins' prefix is a clear 404 naming the field.
    const missing = await bob.post('/v1/sources', { key: 'sluice-does-not-exist' });
    expect(missing.status).toBe(404);
    expect(missing.body.details).toEqual({ fields: { key: 'not found' } });
  });

  it('after a restart, an account deploying a built-in again reuses its saved copy, and sources from built-ins keep running', async () => {
    expect(aliceHook).toBeDefined();
    const { dataDir, apiKey } = server;
    await server.stop();
    server = await startSluice({ dataDir, apiKey, env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
    alice = api(server.url, server.apiKey);
    const again = await deploy(alice, { key: 'sluice-http-webhook', name: 'after restart' });
    expect(again.component_id).toBe(aliceHook!.component_id);
    const endpoint = aliceHook!.endpoint_url.replace(/^http:\/\/[^/]+/, server.url);
    expect((await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"after":"restart"}' })).status).toBe(200);
    const events = await eventuallyFound(async () => {
      const s = await summaries(alice, aliceHook!.id);
      return s.length === 1 ? s : undefined;
    }, 20_000, 'the event after the restart');
    expect(events[0].event.body).toEqual({ after: 'restart' });
  });
});

describe('the built-in registry without the npm registry', () => {
  let server: SluiceProcess;

  beforeAll(async () => {
    // npm cannot reach a registry: only the feed poller imports a package.
    server = await startSluice({ env: { npm_config_registry: 'http://127.0.0.1:9/', npm_config_fetch_retries: '0' } });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('every built-in without packages is listed and deploys; the feed poller is a 400 naming key and saying why, and is not listed', async () => {
    const c = api(server.url, server.apiKey);
    const listed = (await c.get('/v1/components/registry')).body.data.map((d: { key: string }) => d.key);
    expect(listed).toEqual(BUILTIN_KEYS.filter((k) => k !== 'sluice-feed-poller'));
    expect(server.output()).toContain('built-in component sluice/sources/feed-poller.mjs is not available');

    const feed = await c.post('/v1/sources', { key: 'sluice-feed-poller', configured_props: { url: 'http://127.0.0.1:9/feed' } });
    expect(feed.status).toBe(400);
    expect(feed.body.code).toBe('component_invalid');
    expect(feed.body.details.fields.key).toMatch(/^built-in component sluice-feed-poller cannot be loaded: .*fast-xml-parser/);
    expect((await c.get('/v1/users/me/sources')).body.page_info.total_count).toBe(0);

    const hook = await c.post('/v1/sources', { key: 'sluice-http-webhook' });
    expect(hook.status).toBe(200);
    expect((await c.post('/v1/actions/run', { key: 'sluice-format-text', configured_props: { text: 'ok', operation: 'upper' } })).body.data.ret).toBe('OK');
  });
});
