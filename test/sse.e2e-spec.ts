import { RawConnection } from './support/raw-connection';
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

  it('lets a client that goes away go at once: the server closes its side of the connection', async () => {
    const c = api(server.url, server.apiKey);
    const src = (await c.post('/v1/sources', { component_code: CHANNELS })).body.data;
    const raw = new RawConnection(Number(new URL(server.url).port), { allowHalfOpen: true });
    try {
      await raw.write(`GET /v1/sources/${src.id}/sse HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer ${server.apiKey}\r\n\r\n`);
      await raw.until(() => raw.text().includes(': connected'));
      expect(raw.text()).toMatch(/^HTTP\/1\.1 200 [^]*text\/event-stream[^]*: connected/);
      // Gone as a closed tab or an aborted fetch goes: its side ended. The stream's first
      // keep-alive comes after 15 s; the server must not wait for one to fail to notice.
      raw.socket.end();
      expect(await raw.until(() => raw.closed)).toBe(true);
    } finally {
      raw.socket.destroy();
    }
  });

  it('needs a key and the source must be the caller\'s', async () => {
    const c = api(server.url, server.apiKey);
    const src = (await c.post('/v1/sources', { component_code: CHANNELS })).body.data;
    expect((await fetch(`${server.url}/v1/sources/${src.id}/sse`)).status).toBe(401);
    expect((await fetch(`${server.url}/v1/sources/${src.id}/sse`, { headers: { authorization: `Bearer ${otherKey}` } })).status).toBe(404);
  });
});

/** Logs what it got and fails when the body asks to; a `deploy` hook that logs too. */
const LOGGER = `export default { name: "Logger", version: "1", props: { http: { type: "$.interface.http" } },
  hooks: { async deploy() { console.log("deployed"); } },
  run(e) { console.log("got", e.body.n); if (e.body.fail) throw new Error("asked to fail " + e.body.n); } }`;

describe('SSE: a source\'s run and hook logs in real time (/logs/sse)', () => {
  let server: SluiceProcess;
  let otherKey: string;

  beforeAll(async () => {
    const dir = newDataDir();
    await runAdmin(dir, ['create-account', '--name', 'owner', '--key', 'sk_logs_owner_0123456789']);
    otherKey = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'other'])).api_key;
    server = await startSluice({ dataDir: dir, apiKey: 'sk_logs_owner_0123456789' });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('streams each run\'s entry as GET /logs shows it, and resumes after Last-Event-ID from the kept entries', async () => {
    const c = api(server.url, server.apiKey);
    const src = (await c.post('/v1/sources', { component_code: LOGGER })).body.data;
    const auth = { authorization: `Bearer ${server.apiKey}` };
    const post = (body: object) => fetch(src.endpoint_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

    // Live: the deploy hook ran before the stream opened, so only the runs come.
    const live = readEvents(`${server.url}/v1/sources/${src.id}/logs/sse`, auth, 2);
    await new Promise((r) => setTimeout(r, 300));
    await post({ n: 1 });
    await post({ n: 2, fail: true });
    const got = await live;
    expect(got.map((e) => e.data.kind)).toEqual(['run', 'run']);
    expect(got[0].data).toMatchObject({ ok: true, trigger: 'http', logs: [expect.objectContaining({ level: 'log', message: 'got 1' })] });
    expect(got[1].data).toMatchObject({ ok: false, error: { message: 'asked to fail 2' } });
    expect(Number(got[1].id)).toBeGreaterThan(Number(got[0].id));

    // The same entries as the list (newest first there).
    const listed = (await c.get(`/v1/sources/${src.id}/logs`)).body.data;
    expect(listed.slice(0, 2).reverse()).toEqual(got.map((e) => e.data));

    // Resuming from the first live entry replays the second, then goes on live.
    await post({ n: 3 });
    const resumed = await readEvents(`${server.url}/sources/${src.id}/logs/sse`, { ...auth, 'last-event-id': got[0].id }, 2);
    expect(resumed.map((e) => e.data.logs[0].message)).toEqual(['got 2', 'got 3']);
    // From before everything: the hook's entry comes first.
    const fromStart = await readEvents(`${server.url}/v1/sources/${src.id}/logs/sse`, { ...auth, 'last-event-id': '0' }, 4);
    expect(fromStart.map((e) => e.data.kind)).toEqual(['hook:deploy', 'run', 'run', 'run']);
  });

  it('ends the streams of a source when it is deleted (a client reconnecting then gets the 404)', async () => {
    const c = api(server.url, server.apiKey);
    const src = (await c.post('/v1/sources', { component_code: LOGGER })).body.data;
    const auth = { authorization: `Bearer ${server.apiKey}` };
    const ended = (path: string) => fetch(`${server.url}${path}`, { headers: auth }).then(async (res) => {
      expect(res.status).toBe(200);
      await res.text();
      return true;
    });
    const logs = ended(`/v1/sources/${src.id}/logs/sse`);
    const events = ended(`/v1/sources/${src.id}/sse`);
    await new Promise((r) => setTimeout(r, 300));
    expect((await c.del(`/v1/sources/${src.id}`)).status).toBe(200);
    expect(await logs).toBe(true);
    expect(await events).toBe(true);
    expect((await fetch(`${server.url}/v1/sources/${src.id}/logs/sse`, { headers: auth })).status).toBe(404);
  });

  it('needs a key and the source must be the caller\'s', async () => {
    const c = api(server.url, server.apiKey);
    const src = (await c.post('/v1/sources', { component_code: LOGGER })).body.data;
    expect((await fetch(`${server.url}/v1/sources/${src.id}/logs/sse`)).status).toBe(401);
    expect((await fetch(`${server.url}/v1/sources/${src.id}/logs/sse`, { headers: { authorization: `Bearer ${otherKey}` } })).status).toBe(404);
  });
});

describe('SSE: a graceful stop ends the live streams', () => {
  it('SIGTERM with a client still reading: its stream ends cleanly and the server exits, without waiting for the client to leave', async () => {
    const server = await startSluice();
    try {
      const c = api(server.url, server.apiKey);
      const src = (await c.post('/v1/sources', { component_code: CHANNELS })).body.data;
      const res = await fetch(`${server.url}/v1/sources/${src.id}/sse`, { headers: { authorization: `Bearer ${server.apiKey}` } });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      expect(Buffer.from((await reader.read()).value!).toString()).toContain(': connected');
      // This client never leaves: before, the stop waited for it for good.
      const stopped = server.stop().then(() => 'stopped');
      const hung = new Promise((r) => setTimeout(() => r('still running after 15 s'), 15_000).unref());
      expect(await Promise.race([stopped, hung])).toBe('stopped');
      // The stream ended as a stream ends (a clean end of the chunked body), not torn down.
      let done = false;
      while (!done) done = (await reader.read()).done;
      expect(server.proc.exitCode).toBe(0);
    } finally {
      await server.kill();
      removeDataDir(server.dataDir);
    }
  });
});
