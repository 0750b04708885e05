import { api, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';

const CHANNELS = `export default { name: "Channels", version: "1", props: { http: { type: "$.interface.http" } },
  run(e) { this.$emit(e.body, { name: e.body.channel, summary: "n " + e.body.n }); } }`;

/** Reads server-sent events from a stream until `count` arrived (or the time runs out). */
async function readEvents(url: string, headers: Record<string, string>, count: number, timeoutMs = 10_000): Promise<{ id: string; data: any }[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const res = await fetch(url, { headers, signal: controller.signal });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  const out: { id: string; data: any }[] = [];
  const reader = res.body!.getReader();
  let buf = '';
  try {
    while (out.length < count) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += Buffer.from(value).toString('utf8');
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const id = /^id: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (id && data) out.push({ id, data: JSON.parse(data) });
      }
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') throw err;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return out;
}

describe('SSE: a source\'s emits in real time', () => {
  let server: SluiceProcess;
  let otherKey: string;

  beforeAll(async () => {
    const dir = newDataDir();
    // Accounts made before the first start: the server then creates none of its own.
    await runAdmin(dir, ['create-account', '--name', 'owner', '--key', 'sk_sse_owner_0123456789']);
    otherKey = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'other'])).api_key;
    server = await startSluice({ dataDir: dir, apiKey: 'sk_sse_owner_0123456789' });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('streams new emits, filters by channel, and resumes after Last-Event-ID without gaps', async () => {
    const c = api(server.url, server.apiKey);
    const src = (await c.post('/v1/sources', { component_code: CHANNELS })).body.data;
    expect(src.id).toMatch(/^dc_/);
    const auth = { authorization: `Bearer ${server.apiKey}` };
    const post = (n: number, channel = '') => fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n, channel }) });

    const all = readEvents(`${server.url}/v1/sources/${src.id}/sse`, auth, 3);
    const alerts = readEvents(`${server.url}/v1/sources/${src.id}/sse?event_name=alerts`, auth, 1);
    await new Promise((r) => setTimeout(r, 300));
    await post(1);
    await post(2, 'alerts');
    await post(3);
    const got = await all;
    expect(got.map((e) => e.data.event.n)).toEqual([1, 2, 3]);
    expect(got[1].data).toMatchObject({ id: got[1].id, metadata: { emitter_id: src.id, name: 'alerts', summary: 'n 2' } });
    expect((await alerts).map((e) => e.data.event.n)).toEqual([2]);

    await post(4);
    await post(5);
    const resumed = await readEvents(`${server.url}/sources/${src.id}/sse`, { ...auth, 'last-event-id': got[2].id }, 2);
    expect(resumed.map((e) => e.data.event.n)).toEqual([4, 5]);
  });

  it('needs a key and the source must be the caller\'s', async () => {
    const c = api(server.url, server.apiKey);
    const src = (await c.post('/v1/sources', { component_code: CHANNELS })).body.data;
    expect((await fetch(`${server.url}/v1/sources/${src.id}/sse`)).status).toBe(401);
    expect((await fetch(`${server.url}/v1/sources/${src.id}/sse`, { headers: { authorization: `Bearer ${otherKey}` } })).status).toBe(404);
  });
});
