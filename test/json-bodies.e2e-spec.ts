import { RequestGate } from './support/request-gate';
import { api, eventually, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

/** Emits what its run was handed: the event's keys in order, its body and its raw body, whether the body holds -0 or a non-finite number; waits at a gate first when `url` is set. */
const MIRROR = `export default { name: "mirror", version: "1", props: { http: { type: "$.interface.http" }, url: { type: "string", optional: true } },
  async run(e) {
    if (this.url) await fetch(this.url);
    // odd: the body holds -0 or a number past a double, which the emit's JSON would hide.
    const odd = JSON.stringify(e.body, (k, v) => (typeof v === "number" && (Object.is(v, -0) || !Number.isFinite(v)) ? "ODD" : v)) ?? "";
    this.$emit({ keys: Object.keys(e), body: e.body, bodyRaw: e.bodyRaw, isArray: Array.isArray(e.body), odd: odd.includes("ODD") });
  } }`;

/** Bodies whose text parses as is (handed over once, as bodyRaw) and others (handed over as before), with what the run must see. */
const CASES: { raw: string; body: unknown }[] = [
  { raw: '{"n":1,"s":"a \\"q\\" b","when":"2024-01-05","id":"550e8400","list":[1,-10,2.5,null,true]}', body: { n: 1, s: 'a "q" b', when: '2024-01-05', id: '550e8400', list: [1, -10, 2.5, null, true] } },
  { raw: ' [ 1 , {"x" : "y"} ] ', body: [1, { x: 'y' }] },
  { raw: '"text"', body: 'text' },
  // As the server always handed them: -0 as 0, a number past a double as null, __proto__ dropped.
  { raw: '{"z":-0,"big":1e400,"e":2.5E3}', body: { z: 0, big: null, e: 2500 } },
  { raw: '{"neg":-1e-400,"long":[' + '1'.repeat(300) + 'e99],"s":"x,-0"}', body: { neg: 0, long: [null], s: 'x,-0' } },
  { raw: '{"__proto__":{"polluted":true},"ok":1}', body: { ok: 1 } },
  // Not JSON despite its content type: the raw text is the body.
  { raw: '{"broken":', body: '{"broken":' },
  { raw: '{"__proto__":', body: '{"__proto__":' },
];
const KEYS = ['method', 'path', 'url', 'query', 'headers', 'bodyRaw', 'body'];

/**
 * A JSON request body crosses to the sandbox and into the log once, as bodyRaw, and the run parses
 * it (issue 10, large bodies): a run must see exactly the event it saw before, live and when a
 * crash makes the server re-run the request from its record.
 */
describe('JSON request bodies: the run sees the same event, live and after a crash', () => {
  let server: SluiceProcess | undefined;
  afterEach(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
    server = undefined;
  });

  const emitted = async (s: SluiceProcess, sourceId: string, n: number) => eventually(async () => {
    const data = (await api(s.url, s.apiKey).get(`/v1/sources/${sourceId}/event_summaries`, { expand: 'event', limit: '100' })).body.data as { event: Record<string, unknown> }[];
    return data.length === n ? data.map((d) => d.event).reverse() : undefined;
  }, 20_000, `${n} emits`);
  const post = (url: string, raw: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw });

  it('live: each body as the run always saw it, keys in the same order', async () => {
    server = await startSluice();
    const src = (await api(server.url, server.apiKey).post('/v1/sources', { component_code: MIRROR })).body.data;
    for (const c of CASES) expect((await post(src.endpoint_url, c.raw)).status).toBe(200);
    const events = await emitted(server, src.id, CASES.length);
    expect(events).toEqual(CASES.map((c) => ({ keys: KEYS, body: c.body, bodyRaw: c.raw, isArray: Array.isArray(c.body), odd: false })));
  });

  it('after a SIGKILL: requests acknowledged before their runs ended are re-run from their records with the same event', async () => {
    const gate = new RequestGate();
    await gate.start();
    try {
      server = await startSluice({ env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1', SLUICE_SANDBOX_TIMEOUT_MS: '60000' } });
      const src = (await api(server.url, server.apiKey).post('/v1/sources', { component_code: MIRROR, configured_props: { url: gate.url } })).body.data;
      for (const c of CASES) expect((await post(src.endpoint_url, c.raw)).status).toBe(200);
      await gate.waitForHits(1);
      const { dataDir, apiKey } = server;
      await server.kill();
      gate.open();
      server = await startSluice({ dataDir, apiKey, env: { SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' } });
      const events = await emitted(server, src.id, CASES.length);
      expect(events).toEqual(CASES.map((c) => ({ keys: KEYS, body: c.body, bodyRaw: c.raw, isArray: Array.isArray(c.body), odd: false })));
    } finally {
      await gate.stop();
    }
  });
});
