import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

const fixture = (name: string) => readFileSync(join(__dirname, 'fixtures', 'components', `${name}.mjs`), 'utf8');

interface FeedItem {
  guid: string;
  title: string;
  day: number;
}

function rss(items: FeedItem[]): string {
  const entries = items
    .map((i) => `<item><title>${i.title}</title><link>https://example.test/${i.guid}</link><guid isPermaLink="false">${i.guid}</guid><pubDate>${new Date(Date.UTC(2024, 0, i.day)).toUTCString()}</pubDate></item>`)
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>Local feed</title><link>https://example.test/</link><description>Test feed</description>\n${entries}\n</channel></rss>`;
}

/**
 * A local feed on 127.0.0.1 (as a self-hosted blog would serve it): gzip when the client accepts
 * it, newest items first, sent in two parts so the reader gets a stream, not one buffer.
 */
async function startFeed(items: FeedItem[]): Promise<{ server: Server; url: string; requests: () => Array<Record<string, string | string[] | undefined>> }> {
  const requests: Array<Record<string, string | string[] | undefined>> = [];
  const server = createServer((req, res) => {
    requests.push(req.headers);
    const text = rss([...items].reverse());
    const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    const body = gzip ? gzipSync(text) : Buffer.from(text);
    res.writeHead(200, { 'content-type': 'application/rss+xml; charset=utf-8', ...(gzip ? { 'content-encoding': 'gzip' } : {}) });
    const half = Math.floor(body.length / 2);
    res.write(body.subarray(0, half));
    setTimeout(() => res.end(body.subarray(half)), 20);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/feed.xml`, requests: () => requests };
}

describe('an RSS source reading a local feed through axios responseType "stream" and feedparser', () => {
  let server: SluiceProcess;
  let feed: Awaited<ReturnType<typeof startFeed>>;
  const items: FeedItem[] = [
    { guid: 'post-1', title: 'First post', day: 1 },
    { guid: 'post-2', title: 'Second post', day: 2 },
    { guid: 'post-3', title: 'Third post', day: 3 },
  ];

  beforeAll(async () => {
    feed = await startFeed(items);
    server = await startSluice({ env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
    feed?.server.close();
  });

  it('emits each item once, oldest first, and only the new ones on the next poll', async () => {
    const c = api(server.url, server.apiKey);
    const deployed = await c.post('/v1/sources', { component_code: fixture('rss-feed-reader'), configured_props: { url: feed.url } });
    expect(deployed.status).toBe(200);
    const id = deployed.body.data.id as string;

    const first = await c.post(`/v1/sources/${id}/run`);
    expect(first.status).toBe(200);
    expect(first.body.data.ok).toBe(true);
    const firstEvents = first.body.data.emitted.map((e: { event: unknown }) => e.event);
    expect(firstEvents).toEqual(items.map((i) => ({
      title: i.title, link: `https://example.test/${i.guid}`, guid: i.guid, component: id,
    })));
    // axios asked for gzip, so the feed came compressed and was inflated in the sandbox (zlib shim).
    expect(String(feed.requests()[0]['accept-encoding'])).toMatch(/gzip/);

    items.push({ guid: 'post-4', title: 'Fourth post', day: 4 });
    const second = await c.post(`/v1/sources/${id}/run`);
    expect(second.body.data.ok).toBe(true);
    expect(second.body.data.emitted.map((e: { event: { guid: string } }) => e.event.guid)).toEqual(['post-4']);

    const summaries = (await c.get(`/v1/sources/${id}/event_summaries`, { limit: '10' })).body.data as Array<{ metadata: { summary: string } }>;
    expect(summaries.map((s) => s.metadata.summary).sort()).toEqual(['First post', 'Fourth post', 'Second post', 'Third post']);
  });
});
