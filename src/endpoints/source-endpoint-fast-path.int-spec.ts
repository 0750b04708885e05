import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, request, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InProcessServer, MIRROR_SOURCE } from '../../test/support/in-process-server';
import { eventually } from '../../test/support/sluice-process';

/** Answers from the request's query: `status`, `type` (a content type), `bytes` (a body of bytes, in base64), `text`; `fail` throws, `silent` does not answer. */
const RESPONDER = `export default { name: "responder", version: "1", props: { http: { type: "$.interface.http", customResponse: true } },
  run(event) {
    const q = event.query;
    if (q.fail) throw new Error("asked to fail");
    if (q.silent) return;
    const headers = { "X-Echo": event.method + " " + event.path };
    if (q.type) headers["Content-Type"] = q.type;
    const answer = { status: Number(q.status || 200), headers };
    if (q.bytes) answer.body = Uint8Array.from(atob(q.bytes), (c) => c.charCodeAt(0));
    else answer.body = q.text === undefined ? "" : q.text;
    this.http.respond(answer);
  } }`;

/** A source whose runs wait for the gate's answer: each request stays a waiting run until the gate opens. */
const GATED = `export default { name: "gated", version: "1", props: { http: { type: "$.interface.http" }, gate: { type: "string" } },
  async run(event) { await fetch(this.gate); this.$emit(event.body); } }`;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** Fastify's handler channel: published for each request that reaches a Fastify route. */
const FASTIFY_HANDLER = 'tracing:fastify.request.handler:start';

/** An in-process server, and what reached its Fastify routes. */
class Harness extends InProcessServer {
  /** Requests that reached a Fastify route handler so far. */
  fastifyHandled = 0;
  private readonly count = () => this.fastifyHandled++;

  override async start(env: Record<string, string> = {}): Promise<void> {
    subscribe(FASTIFY_HANDLER, this.count);
    // Node's server reads every request here: the lean one in front of it (the default) would take
    // the plain ones first; it is compared with this path in lean-endpoint-server.int-spec.ts.
    await super.start({ SLUICE_ENDPOINT_SERVER: 'node', ...env });
    expect(this.server.lean).toBeUndefined();
  }

  override async stop(): Promise<void> {
    unsubscribe(FASTIFY_HANDLER, this.count);
    await super.stop();
  }

  /**
   * One request: with `chunked` the body goes without a length (`transfer-encoding: chunked`),
   * which the fast path leaves to Fastify; otherwise with `content-length`.
   */
  send(method: string, target: string, body: string | undefined, headers: Record<string, string>, chunked: boolean): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const h: Record<string, string> = { ...headers };
      if (body !== undefined && !chunked) h['content-length'] = String(Buffer.byteLength(body));
      if (body !== undefined && chunked) h['transfer-encoding'] = 'chunked';
      const req = request(`${this.server.url}${target}`, { method, headers: h, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      if (body !== undefined && chunked) {
        // Two chunks, so the body really arrives in pieces.
        const half = Math.floor(body.length / 2);
        req.write(body.slice(0, half));
        req.end(body.slice(half));
      } else {
        req.end(body);
      }
    });
  }

  /** The same request by both ways: the fast path's answer, then Fastify's. */
  async both(method: string, target: string, body: string, headers: Record<string, string> = {}): Promise<{ fast: Answer; routed: Answer }> {
    const before = this.fastifyHandled;
    const fast = await this.send(method, target, body, headers, false);
    expect(this.fastifyHandled).toBe(before);
    const routed = await this.send(method, target, body, headers, true);
    expect(this.fastifyHandled).toBe(before + 1);
    return { fast, routed };
  }
}

/** What a client can see of an answer, minus what differs by nature (date, request ids). */
function visible(a: Answer): unknown {
  const { date: _date, ...headers } = a.headers;
  const text = a.body.toString('utf8');
  let body: unknown = a.body.toString('base64');
  if (String(a.headers['content-type'] ?? '').startsWith('application/json')) {
    const json = JSON.parse(text) as Record<string, unknown>;
    if (typeof json.request_id === 'string') json.request_id = 'a request id';
    body = json;
  }
  return { status: a.status, headers, body };
}

describe('source endpoints in front of Fastify (the fast path)', () => {
  const h = new Harness();
  let mirror: { id: string; key: string };
  let responder: { key: string };

  beforeAll(async () => {
    await h.start();
    mirror = await h.deploy(MIRROR_SOURCE);
    responder = await h.deploy(RESPONDER);
  }, 60_000);
  afterAll(() => h.stop());

  it('counts the requests that reach a Fastify route (the observation the other cases rely on)', async () => {
    const before = h.fastifyHandled;
    await h.api('GET', `/v1/sources/${mirror.id}`);
    expect(h.fastifyHandled).toBe(before + 1);
  });

  it('records a request exactly as the route does: method, path, URL, query, headers and body', async () => {
    const cases: [string, string, string, Record<string, string>][] = [
      ['POST', `/e/${mirror.key}`, '{"n":1,"nested":{"a":[1,2]}}', { 'content-type': 'application/json' }],
      ['POST', `/e/${mirror.key}/deep/path?x=1&x=2&y=a+b&z=%41%ZZ&empty=&flag`, 'a=1&b=two', { 'content-type': 'application/x-www-form-urlencoded', 'x-custom': 'v' }],
      ['PUT', `/e/${mirror.key}/?__proto__=p&constructor=c`, 'plain text ü', { 'content-type': 'text/plain; charset=utf-8' }],
      ['PATCH', `/e/${mirror.key}`, '{not json', { 'content-type': 'application/json' }],
      ['DELETE', `/e/${mirror.key}/a%20b`, '', {}],
    ];
    for (const [method, target, body, headers] of cases) {
      const { fast, routed } = await h.both(method, target, body, headers);
      expect(fast.status).toBe(200);
      expect(visible(fast)).toEqual(visible(routed));
    }
    const events = await h.emitted(mirror.id, cases.length * 2);
    for (let i = 0; i < cases.length; i++) {
      const [fast, routed] = [events[2 * i], events[2 * i + 1]];
      // Only the framing differs: a length one way, chunks the other.
      expect(fast.headers['content-length']).toBeDefined();
      expect(routed.headers['transfer-encoding']).toBe('chunked');
      for (const e of [fast, routed]) {
        delete e.headers['content-length'];
        delete e.headers['transfer-encoding'];
      }
      expect(fast).toEqual(routed);
      expect(fast.method).toBe(cases[i][0]);
    }
    // The query as a route parses it (repeated keys, '+', a bad escape; keys shaped like prototypes were compared above).
    expect(events[2].query).toEqual({ x: ['1', '2'], y: 'a b', z: '%41%ZZ', empty: '', flag: '' });
    expect(events[6].body).toBe('{not json');
  });

  it('takes a request without a body (a GET) too', async () => {
    const before = h.fastifyHandled;
    const r = await h.send('GET', `/e/${responder.key}/get?text=got`, undefined, {}, false);
    expect(h.fastifyHandled).toBe(before);
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('got');
  });

  it('answers a custom response as the route does: status, headers, text, bytes and the failures', async () => {
    const b64 = Buffer.from([0, 1, 2, 250, 255]).toString('base64');
    const targets = [
      `/e/${responder.key}/hello?text=hi%20there`,
      `/e/${responder.key}?status=201&type=text/csv&text=a,b`,
      `/e/${responder.key}?bytes=${encodeURIComponent(b64)}`,
      `/e/${responder.key}?bytes=${encodeURIComponent(b64)}&type=image/png`,
      `/e/${responder.key}?status=204&text=dropped`,
      `/e/${responder.key}?status=404&type=application/json&text=%7B%22e%22%3A1%7D`,
      `/e/${responder.key}?fail=1`,
      `/e/${responder.key}?silent=1`,
    ];
    const seen: unknown[] = [];
    for (const target of targets) {
      const { fast, routed } = await h.both('POST', target, '{}', { 'content-type': 'application/json' });
      expect(visible(fast)).toEqual(visible(routed));
      seen.push(visible(fast));
    }
    expect(seen[0]).toMatchObject({ status: 200, headers: { 'content-type': 'text/plain; charset=utf-8', 'x-echo': 'POST /hello' }, body: Buffer.from('hi there').toString('base64') });
    expect(seen[1]).toMatchObject({ status: 201, headers: { 'content-type': 'text/csv' } });
    expect(seen[2]).toMatchObject({ headers: { 'content-type': 'application/octet-stream', 'content-length': '5' }, body: b64 });
    expect(seen[3]).toMatchObject({ headers: { 'content-type': 'image/png' }, body: b64 });
    expect(seen[4]).toMatchObject({ status: 204, body: '' });
    expect((seen[4] as { headers: object }).headers).not.toHaveProperty('content-type');
    expect((seen[4] as { headers: object }).headers).not.toHaveProperty('content-length');
    // The content type as the component named it (Fastify's reply would have added a charset).
    expect(seen[5]).toMatchObject({ status: 404, headers: { 'content-type': 'application/json' }, body: { e: 1 } });
    expect(seen[6]).toMatchObject({ status: 500, body: { code: 'run_failed' } });
    expect(seen[7]).toMatchObject({ status: 502, body: { code: 'no_response' } });
  });

  it('leaves to Fastify what it would not answer the same: unknown keys, escaped keys, bodies over the limit', async () => {
    let before = h.fastifyHandled;
    const unknown = await h.send('POST', '/e/no-such-key', '{}', { 'content-type': 'application/json' }, false);
    expect(unknown.status).toBe(404);
    expect(h.fastifyHandled).toBe(++before);
    const escaped = await h.send('POST', `/e/${mirror.key.slice(0, 3)}%${mirror.key.charCodeAt(3).toString(16)}${mirror.key.slice(4)}`, '{}', {}, false);
    expect(escaped.status).toBe(200);
    expect(h.fastifyHandled).toBe(++before);
    const limit = h.server.engine.config.maxEndpointBodyBytes;
    // Fastify refuses it in its body parser, before any handler: a 413, where the fast path would have taken it.
    const tooLarge = await h.send('POST', `/e/${mirror.key}`, 'x'.repeat(limit + 1), { 'content-type': 'text/plain' }, false);
    expect(tooLarge.status).toBe(413);
    expect(JSON.parse(tooLarge.body.toString())).toMatchObject({ code: 'payload_too_large' });
    const atLimit = await h.send('POST', `/e/${mirror.key}`, 'x'.repeat(limit), { 'content-type': 'text/plain' }, false);
    expect(atLimit.status).toBe(200);
    expect(h.fastifyHandled).toBe(before);
    // The mirror's runs all end before the server stops (5 pairs earlier, and these two).
    await eventually(async () => ((await h.api('GET', `/v1/sources/${mirror.id}/event_summaries?limit=100`)).length >= 12 ? true : undefined));
  });
});

/** A step that returns the run's trigger event; one that answers the caller from it. */
const RETURN_TRIGGER = `export default { name: "ret", version: "1", type: "action", props: {},
  async run({ steps }) { return steps.trigger.event; } }`;
const RESPOND_STEP = `export default { name: "respond", version: "1", type: "action", props: {},
  async run({ steps, $ }) { const e = steps.trigger.event; await $.respond({ status: 201, headers: { "x-path": e.path }, body: { got: e.body } }); } }`;

describe('workflow endpoints in front of Fastify (the fast path)', () => {
  const h = new Harness();

  beforeAll(() => h.start(), 60_000);
  afterAll(() => h.stop());

  async function workflow(name: string, customResponse: boolean, code: string): Promise<{ id: string; key: string }> {
    const wf = await h.api('POST', '/v1/workflows', {
      name, trigger: { type: 'http', ...(customResponse ? { custom_response: true } : {}) },
      steps: [{ name: 'only', component_code: code, configured_props: {} }],
    });
    return { id: wf.id as string, key: (wf.trigger.endpoint_url as string).split('/e/')[1] };
  }
  /** The run's id in an answer replaced, as `visible` replaces request ids. */
  const withoutRunId = (a: Answer) => {
    const v = visible(a) as { body: unknown; headers: Record<string, unknown> };
    if (v.body && typeof v.body === 'object' && 'run_id' in v.body) (v.body as Record<string, unknown>).run_id = 'a run id';
    return v;
  };

  it('starts a run exactly as the route does: the same answer, the same trigger event', async () => {
    const wf = await workflow('Fast plain', false, RETURN_TRIGGER);
    const { fast, routed } = await h.both('POST', `/e/${wf.key}/deep?x=1&x=2`, '{"n":1}', { 'content-type': 'application/json', 'x-custom': 'v' });
    expect(fast.status).toBe(200);
    expect(withoutRunId(fast)).toEqual(withoutRunId(routed));
    const ids = [fast, routed].map((a) => (JSON.parse(a.body.toString()) as { run_id: string }).run_id);
    const rets = (await eventually(async () => {
      const runs = await Promise.all(ids.map((id) => h.api('GET', `/v1/workflows/${wf.id}/runs/${id}`)));
      return runs.every((r) => r?.status === 'succeeded') ? runs.map((r) => r.steps[0].ret as Record<string, any>) : undefined;
    }))!;
    expect(rets[0].headers['content-length']).toBeDefined();
    expect(rets[1].headers['transfer-encoding']).toBe('chunked');
    for (const e of rets) {
      delete e.headers['content-length'];
      delete e.headers['transfer-encoding'];
    }
    expect(rets[0]).toEqual(rets[1]);
    expect(rets[0]).toMatchObject({ method: 'POST', body: { n: 1 }, query: { x: ['1', '2'] } });
  });

  it('answers a custom response as the route does', async () => {
    const wf = await workflow('Fast responder', true, RESPOND_STEP);
    const { fast, routed } = await h.both('POST', `/e/${wf.key}/hello`, '{"a":1}', { 'content-type': 'application/json' });
    expect(fast.status).toBe(201);
    expect(fast.headers['x-path']).toBe('/hello');
    expect(JSON.parse(fast.body.toString())).toEqual({ got: { a: 1 } });
    expect(visible(fast)).toEqual(visible(routed));
  });

  it('stops taking a workflow the moment it is deactivated or deleted, and takes it again once active', async () => {
    const wf = await workflow('Fast switched', false, RETURN_TRIGGER);
    const post = () => h.send('POST', `/e/${wf.key}`, '{}', { 'content-type': 'application/json' }, false);
    let before = h.fastifyHandled;
    expect((await post()).status).toBe(200);
    expect(h.fastifyHandled).toBe(before);
    await h.api('PUT', `/v1/workflows/${wf.id}`, { active: false });
    before = h.fastifyHandled;
    expect((await post()).status).toBe(404);
    expect(h.fastifyHandled).toBe(before + 1);
    await h.api('PUT', `/v1/workflows/${wf.id}`, { active: true });
    before = h.fastifyHandled;
    expect((await post()).status).toBe(200);
    expect(h.fastifyHandled).toBe(before);
    await h.api('DELETE', `/v1/workflows/${wf.id}`);
    before = h.fastifyHandled;
    expect((await post()).status).toBe(404);
    expect(h.fastifyHandled).toBe(before + 1);
  });
});

describe('the fast path and the cap of waiting runs', () => {
  const h = new Harness();
  let gate: Server;
  let gateUrl = '';
  let gateOpen = false;
  const held: ServerResponse[] = [];

  beforeAll(async () => {
    gate = createServer((_req, res) => (gateOpen ? res.end('open') : held.push(res)));
    await new Promise<void>((r) => gate.listen(0, '127.0.0.1', () => r()));
    gateUrl = `http://127.0.0.1:${(gate.address() as AddressInfo).port}/gate`;
    await h.start({ SLUICE_MAX_QUEUED_RUNS: '2', SLUICE_COMPONENT_EGRESS_ALLOW: '127.0.0.1' });
  }, 60_000);
  afterAll(async () => {
    gateOpen = true;
    for (const res of held.splice(0)) res.end('open');
    await h.stop();
    gate.closeAllConnections();
    gate.close();
  });

  it('refuses beyond the waiting runs as the route does: a 429 with retry-after, then takes requests again', async () => {
    const gated = await h.deploy(GATED, { gate: gateUrl });
    const target = `/e/${gated.key}`;
    const json = { 'content-type': 'application/json' };
    for (let i = 0; i < 2; i++) expect((await h.send('POST', target, '{"n":1}', json, false)).status).toBe(200);
    await eventuallyTrue(() => held.length >= 1);
    const { fast, routed } = await h.both('POST', target, '{"n":2}', json);
    expect(fast.status).toBe(429);
    expect(fast.headers['retry-after']).toBe('1');
    expect(visible(fast)).toEqual(visible(routed));
    // Once the gate answers, the runs end and there is room again.
    gateOpen = true;
    for (const res of held.splice(0)) res.end('open');
    let accepted = 2;
    await eventually(async () => ((await h.send('POST', target, '{"n":3}', json, false)).status === 200 ? accepted++ : undefined));
    // Every accepted run ends (none is cut short by the server's stop).
    await eventually(async () => ((await h.api('GET', `/v1/sources/${gated.id}/event_summaries?limit=100`)).length >= accepted ? true : undefined));
  });
});

async function eventuallyTrue(probe: () => boolean, ms = 20_000): Promise<void> {
  await eventually(async () => (probe() ? true : undefined), ms);
}
