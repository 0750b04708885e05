import { SandboxSupervisor } from '@app/sandbox';
import { component, invocation } from './sandbox-test.helper';

// Real worker processes running the compiled sandbox (dist/): `npm test` builds first.
describe('SandboxSupervisor: the component contract', () => {
  const sandbox = new SandboxSupervisor({ workers: 2, egress: { allow: [] } });
  beforeAll(() => sandbox.start());
  afterAll(() => sandbox.stop());

  it('runs run(event), records emits with their meta and the return value', async () => {
    const c = await component(`export default {
      name: "emitter", version: "1.0.0",
      async run(event) {
        this.$emit({ n: event.n }, { id: "a-" + event.n, name: "chan", summary: "first", ts: 1700000000000, other: 1 });
        this.$emit(undefined, { id: 2 });
        this.$emit("plain");
        return { seen: event.n };
      },
    }`);
    const result = await sandbox.invoke(invocation(c, { event: { n: 7 } }));
    expect(result.ok).toBe(true);
    expect(result.emits).toEqual([
      { event: { n: 7 }, meta: { id: 'a-7', name: 'chan', summary: 'first', ts: 1700000000000 } },
      { event: null, meta: { id: 2 } },
      { event: 'plain', meta: {} },
    ]);
    expect(result.returnValue).toEqual({ seen: 7 });
    expect(result.durationMs).toBeGreaterThan(0);
    expect(result.cpuMs).toBeGreaterThanOrEqual(0);
  });

  it('gives run the same event from its JSON text (eventJson) as from the object, batched or alone', async () => {
    const c = await component(`export default {
      async run(event) { return { event, keys: Object.keys(event), type: typeof event.body }; },
    }`);
    const event = { method: 'POST', path: '/a"b', url: 'http://x/e/k/a"b', query: { q: ['1', '2'] },
      headers: { 'content-type': 'application/json', 'x-\u00e9': 'caf\u00e9 \u2603' }, bodyRaw: '{"n":1,"s":"\\"q\\""}', body: { n: 1, s: '"q"' } };
    const asObject = await sandbox.invoke(invocation(c, { event }));
    expect(asObject.ok).toBe(true);
    // Several at once go into the isolate as one batch, each with its own event.
    const asText = await Promise.all([1, 2, 3].map((n) => sandbox.invoke(invocation(c, { eventJson: JSON.stringify({ ...event, n }) }))));
    for (const [i, r] of asText.entries()) {
      expect(r.ok).toBe(true);
      expect(r.returnValue).toEqual({ event: { ...event, n: i + 1 }, keys: [...Object.keys(event), 'n'], type: 'object' });
    }
    expect(asObject.returnValue).toEqual({ event, keys: Object.keys(event), type: 'object' });
  });

  it('refuses an eventJson that is not a string', async () => {
    const c = await component(`export default { run(event) { return event } }`);
    await expect(sandbox.invoke(invocation(c, { eventJson: { n: 1 } as never }))).rejects.toThrow(/eventJson must be a string/);
  });

  it('refuses events that are not JSON-serialisable with a clear error', async () => {
    const c = await component(`export default { run() { const a = {}; a.self = a; this.$emit(a) } }`);
    const result = await sandbox.invoke(invocation(c));
    expect(result.ok).toBe(false);
    expect(result.error).toMatchObject({ kind: 'user', name: 'TypeError' });
    expect(result.error?.message).toMatch(/\$emit: the event must be JSON-serialisable/);
  });

  it('captures console output as logs, with the error of a failed run last', async () => {
    const c = await component(`export default {
      run() {
        console.log("hello", { a: [1, 2] }, 3);
        console.info("%s is %d years", "Bob", 42);
        console.warn("careful");
        console.error(new Error("shown"));
        console.debug("dbg");
        throw new TypeError("boom");
      },
    }`);
    const result = await sandbox.invoke(invocation(c));
    expect(result.ok).toBe(false);
    expect(result.error).toMatchObject({ kind: 'user', name: 'TypeError', message: 'boom' });
    expect(result.error?.stack).toContain('TypeError: boom');
    expect(result.logs.map((l) => [l.level, l.message.split('\n')[0]])).toEqual([
      ['log', 'hello { a: [ 1, 2 ] } 3'],
      ['info', 'Bob is 42 years'],
      ['warn', 'careful'],
      ['error', 'Error: shown'],
      ['debug', 'dbg'],
      ['error', 'TypeError: boom'],
    ]);
    expect(result.logs.every((l) => typeof l.ts === 'number')).toBe(true);
  });

  it('reports a ConfigurationError by name, without a stack', async () => {
    const c = await component(`class ConfigurationError extends Error { constructor(m) { super(m); this.name = "ConfigurationError"; } }
      export default { run() { throw new ConfigurationError("the sheet has no header row") } }`);
    const result = await sandbox.invoke(invocation(c));
    expect(result.error).toEqual({ kind: 'user', name: 'ConfigurationError', message: 'the sheet has no header row' });
  });

  it('serves db.get/db.set from the snapshot plus the writes of the run, in order', async () => {
    const c = await component(`export default {
      props: { db: "$.service.db" },
      run() {
        const before = this.db.get("count");
        const copy = this.db.get("obj"); copy.mutated = true;
        this.db.set("count", before + 1);
        this.db.set("count", this.db.get("count") + 1);
        this.db.set("list", [1, "two", { three: 3 }]);
        this.db.set("cleared", undefined);
        return { before, after: this.db.get("count"), obj: this.db.get("obj"), missing: this.db.get("nope") ?? "undefined" };
      },
    }`);
    const result = await sandbox.invoke(invocation(c, { dbProps: ['db'], db: { count: 10, obj: { a: 1 } } }));
    expect(result.ok).toBe(true);
    expect(result.returnValue).toEqual({ before: 10, after: 12, obj: { a: 1 }, missing: 'undefined' });
    expect(result.dbWrites).toEqual([
      { key: 'count', value: 11 },
      { key: 'count', value: 12 },
      { key: 'list', value: [1, 'two', { three: 3 }] },
      { key: 'cleared', value: null },
    ]);
  });

  it('refuses db values over 60 KB and values that are not JSON-serialisable', async () => {
    const c = await component(`export default {
      props: { db: "$.service.db" },
      run(event) {
        if (event.kind === "big") this.db.set("big", "x".repeat(61 * 1024));
        if (event.kind === "fn") this.db.set("fn", () => 1);
        if (event.kind === "bigint") this.db.set("n", { n: 1n });
        this.db.set("fits", "x".repeat(60 * 1024 - 2));
      },
    }`);
    const big = await sandbox.invoke(invocation(c, { dbProps: ['db'], event: { kind: 'big' } }));
    expect(big.error).toMatchObject({ kind: 'user', name: 'RangeError' });
    expect(big.error?.message).toMatch(/db.set\("big"\): the value is \d+ bytes as JSON, more than the 60 KB allowed/);
    const fn = await sandbox.invoke(invocation(c, { dbProps: ['db'], event: { kind: 'fn' } }));
    expect(fn.error?.message).toMatch(/must be JSON-serialisable/);
    const bigint = await sandbox.invoke(invocation(c, { dbProps: ['db'], event: { kind: 'bigint' } }));
    expect(bigint.error?.message).toMatch(/must be JSON-serialisable/);
    const fits = await sandbox.invoke(invocation(c, { dbProps: ['db'], event: {} }));
    expect(fits.ok).toBe(true);
    expect(fits.dbWrites).toHaveLength(1);
  });

  it('binds methods to the instance and exposes props, defaults, app $auth and the timer', async () => {
    const c = await component(`export default {
      props: {
        greeting: { type: "string" },
        punctuation: { type: "string", optional: true, default: "!" },
        github: { type: "app", app: "github", methods: { token() { return this.$auth.oauth_access_token } } },
        timer: { type: "$.interface.timer", default: { intervalSeconds: 60 } },
      },
      methods: {
        greet(name) { return this.greeting + ", " + name + this.punctuation; },
        viaDestructuring() { const { greet } = this; return greet("Ann"); },
      },
      async run() {
        try { this.github.$auth.oauth_access_token = "changed"; } catch {}
        const frozen = this.github.$auth.oauth_access_token === "tok" && Object.isFrozen(this.github.$auth) ? "read-only" : "writable";
        return { greet: this.greet("Bob"), destructured: this.viaDestructuring(), token: this.github.token(), frozen, timer: this.timer };
      },
    }`);
    const result = await sandbox.invoke(invocation(c, {
      props: { greeting: 'Hello', github: { $auth: { oauth_access_token: 'tok' } } },
      timerProps: { timer: { intervalSeconds: 15 } },
    }));
    expect(result.error).toBeUndefined();
    expect(result.returnValue).toEqual({
      greet: 'Hello, Bob!', destructured: 'Hello, Ann!', token: 'tok', frozen: 'read-only', timer: { intervalSeconds: 15 },
    });
  });

  it('gives every invocation a fresh instance while module state stays warm', async () => {
    const c = await component(`let calls = 0;
      export default { props: { n: { type: "integer" } }, run() { calls++; const had = this.marker; this.marker = this.n; return { calls, had: had ?? null, n: this.n } } }`);
    const first = await sandbox.invoke(invocation(c, { props: { n: 1 } }));
    const second = await sandbox.invoke(invocation(c, { props: { n: 2 } }));
    expect(first.returnValue).toEqual({ calls: 1, had: null, n: 1 });
    expect(second.returnValue).toEqual({ calls: 2, had: null, n: 2 });
  });

  describe('this.http.respond', () => {
    const code = `export default {
      props: { http: { type: "$.interface.http", customResponse: true } },
      run(event) {
        if (event.mode === "object") this.http.respond({ status: 201, headers: { "x-a": "1", "x-n": 2 }, body: { ok: true } });
        if (event.mode === "text") this.http.respond({ status: 200, body: "plain" });
        if (event.mode === "bytes") this.http.respond({ status: 202, body: new Uint8Array([0, 255, 1]) });
        if (event.mode === "bad-status") this.http.respond({ status: 99 });
        if (event.mode === "float-status") this.http.respond({ status: 200.5 });
        if (event.mode === "informational") this.http.respond({ status: 101, headers: { upgrade: "websocket" } });
        if (event.mode === "string-status") this.http.respond({ status: "204" });
        if (event.mode === "bad-string-status") this.http.respond({ status: "20x" });
        if (event.mode === "twice") { this.http.respond({ status: 200 }); this.http.respond({ status: 200 }); }
        return this.http.endpoint;
      },
      hooks: { activate() { this.http.respond({ status: 200 }) } },
    }`;
    const http = { http: { endpoint: 'https://sluice.example/e/abc', customResponse: true } };

    it('records the response: JSON objects, text and bytes', async () => {
      const c = await component(code);
      const object = await sandbox.invoke(invocation(c, { httpProps: http, event: { mode: 'object' } }));
      expect(object.returnValue).toBe('https://sluice.example/e/abc');
      expect(object.httpResponse).toEqual({
        status: 201,
        headers: { 'x-a': '1', 'x-n': '2', 'content-type': 'application/json; charset=utf-8' },
        body: '{"ok":true}',
      });
      const text = await sandbox.invoke(invocation(c, { httpProps: http, event: { mode: 'text' } }));
      expect(text.httpResponse).toEqual({ status: 200, headers: {}, body: 'plain' });
      const numericString = await sandbox.invoke(invocation(c, { httpProps: http, event: { mode: 'string-status' } }));
      expect(numericString.httpResponse).toEqual({ status: 204, headers: {} });
      const bytes = await sandbox.invoke(invocation(c, { httpProps: http, event: { mode: 'bytes' } }));
      expect(bytes.httpResponse).toEqual({ status: 202, headers: {}, bodyBase64: Buffer.from([0, 255, 1]).toString('base64') });
    });

    it('refuses a bad status, a second response and a response outside run()', async () => {
      const c = await component(code);
      const bad = await sandbox.invoke(invocation(c, { httpProps: http, event: { mode: 'bad-status' } }));
      expect(bad.error).toMatchObject({ kind: 'user', name: 'RangeError' });
      expect(bad.error?.message).toMatch(/status must be an integer from 200 to 599, got 99/);
      const float = await sandbox.invoke(invocation(c, { httpProps: http, event: { mode: 'float-status' } }));
      expect(float.error?.message).toMatch(/status must be an integer from 200 to 599/);
      for (const mode of ['informational', 'bad-string-status']) {
        const refused = await sandbox.invoke(invocation(c, { httpProps: http, event: { mode } }));
        expect(refused.httpResponse).toBeUndefined();
        expect(refused.error?.name).toBe('RangeError');
      }
      const informational = await sandbox.invoke(invocation(c, { httpProps: http, event: { mode: 'informational' } }));
      expect(informational.error?.message).toMatch(/status 101 is informational \(1xx\); the response must be final/);
      const twice = await sandbox.invoke(invocation(c, { httpProps: http, event: { mode: 'twice' } }));
      expect(twice.error?.message).toMatch(/already called/);
      const hook = await sandbox.invoke(invocation(c, { httpProps: http, entry: 'activate' }));
      expect(hook.error?.message).toMatch(/may only be called in run\(\)/);
    });

    it('refuses respond() without customResponse', async () => {
      const c = await component(code);
      const result = await sandbox.invoke(invocation(c, {
        httpProps: { http: { endpoint: 'https://sluice.example/e/abc', customResponse: false } },
        event: { mode: 'text' },
      }));
      expect(result.ok).toBe(false);
      expect(result.error?.message).toMatch(/needs customResponse: true/);
      expect(result.httpResponse).toBeUndefined();
    });
  });

  it('runs hooks with the same instance surface; a missing hook does nothing', async () => {
    const c = await component(`export default {
      props: { db: "$.service.db", http: "$.interface.http" },
      methods: { register(url) { this.db.set("webhook", url) } },
      hooks: {
        async deploy() { this.$emit({ historical: true }, { id: "h1" }) },
        async activate() { this.register(this.http.endpoint); console.log("registered", this.http.endpoint); },
      },
      run() {},
    }`);
    const base = { dbProps: ['db'], httpProps: { http: { endpoint: 'https://h/e/1', customResponse: false } } };
    const deploy = await sandbox.invoke(invocation(c, { ...base, entry: 'deploy' }));
    expect(deploy.emits).toEqual([{ event: { historical: true }, meta: { id: 'h1' } }]);
    const activate = await sandbox.invoke(invocation(c, { ...base, entry: 'activate' }));
    expect(activate.dbWrites).toEqual([{ key: 'webhook', value: 'https://h/e/1' }]);
    expect(activate.logs[0].message).toBe('registered https://h/e/1');
    const deactivate = await sandbox.invoke(invocation(c, { ...base, entry: 'deactivate' }));
    expect(deactivate).toMatchObject({ ok: true, emits: [], dbWrites: [], logs: [] });
  });

  it('awaits async runs, timers included, and clears what is left when the run ends', async () => {
    const c = await component(`export default {
      async run() {
        const order = [];
        await new Promise((resolve) => setTimeout(() => { order.push("timeout"); resolve(); }, 20));
        await new Promise((resolve) => { let n = 0; const id = setInterval(() => { order.push("tick"); if (++n === 3) { clearInterval(id); resolve(); } }, 5); });
        const cancelled = setTimeout(() => order.push("never"), 1);
        clearTimeout(cancelled);
        setTimeout(() => console.log("after the run"), 50);
        await new Promise((r) => setTimeout(r, 10));
        return order;
      },
    }`);
    const result = await sandbox.invoke(invocation(c));
    expect(result.returnValue).toEqual(['timeout', 'tick', 'tick', 'tick']);
    await new Promise((r) => setTimeout(r, 100));
    const again = await sandbox.invoke(invocation(c));
    expect(again.logs).toEqual([]);
  });

  it('fails the run on an exception thrown in a timer callback', async () => {
    const c = await component(`export default { async run() { setTimeout(() => { throw new RangeError("in timer") }, 1); await new Promise(() => {}); } }`);
    const result = await sandbox.invoke(invocation(c, { limits: { timeoutMs: 5000 } }));
    expect(result.error).toMatchObject({ kind: 'user', name: 'RangeError', message: 'in timer' });
  });

  it('provides the web surface', async () => {
    const c = await component(`export default {
      async run() {
        const bytes = new TextEncoder().encode("héllo ☃ 😀");
        const url = new URL("/p/a?b=1&c=two+words#h", "https://user:pw@Example.COM:8443");
        url.searchParams.append("d", "é&=");
        const params = new URLSearchParams({ x: "1", y: "a b" });
        const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode("abc")));
        const random = crypto.getRandomValues(new Uint8Array(16));
        const controller = new AbortController();
        let aborted = null;
        controller.signal.addEventListener("abort", () => { aborted = controller.signal.reason.name; });
        controller.abort();
        const cloned = structuredClone({ d: new Date(0), m: new Map([[1, { s: new Set([2]) }]]) });
        const t0 = performance.now();
        return {
          bytes: Array.from(bytes),
          text: new TextDecoder().decode(bytes),
          href: url.href, host: url.host, search: url.search, c: url.searchParams.get("c"),
          params: params.toString(),
          b64: btoa("hi\\u00ff"), unb64: atob("aGk="),
          digest: Array.from(digest).map((b) => b.toString(16).padStart(2, "0")).join(""),
          randomLength: random.length, randomVaries: random.some((b) => b !== random[0]),
          uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID()),
          aborted,
          cloned: cloned.d instanceof Date && cloned.m.get(1).s.has(2),
          now: typeof t0 === "number" && performance.now() >= t0,
          queueMicrotask: await new Promise((r) => queueMicrotask(() => r("ran"))),
          headers: new Headers({ "X-A": "1" }).get("x-a"),
          response: await new Response('{"a":1}').json(),
        };
      },
    }`);
    const result = await sandbox.invoke(invocation(c));
    expect(result.error).toBeUndefined();
    expect(result.returnValue).toEqual({
      bytes: [...Buffer.from('héllo ☃ 😀')],
      text: 'héllo ☃ 😀',
      href: 'https://user:pw@example.com:8443/p/a?b=1&c=two+words&d=%C3%A9%26%3D#h',
      host: 'example.com:8443',
      search: '?b=1&c=two+words&d=%C3%A9%26%3D',
      c: 'two words',
      params: 'x=1&y=a+b',
      b64: Buffer.from('hi\u00ff', 'latin1').toString('base64'),
      unb64: 'hi',
      digest: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      randomLength: 16,
      randomVaries: true,
      uuid: true,
      aborted: 'AbortError',
      cloned: true,
      now: true,
      queueMicrotask: 'ran',
      headers: '1',
      response: { a: 1 },
    });
  });

  it('describes a definition as plain data', async () => {
    const c = await component(`const common = { props: { token: { type: "string", secret: true, label: "Token" } } };
      export default {
        name: "Described", key: "app-described", version: "0.1.0", type: "source", description: "d", dedupe: "unique",
        props: {
          ...common.props,
          db: "$.service.db",
          n: { type: "integer", min: 1, max: 5, optional: true, default: 2 },
          pick: { type: "string", async options({ page }) { return ["a"] } },
          http: { type: "$.interface.http", customResponse: true },
        },
        hooks: { deploy() {}, activate() {} },
        methods: { helper() {} },
        additionalProps() { return {} },
        run() {},
      }`);
    const description = await sandbox.describe(c.codeId, c.bundle);
    expect(description).toEqual({
      name: 'Described', key: 'app-described', version: '0.1.0', type: 'source', description: 'd', dedupe: 'unique',
      props: [
        { name: 'token', type: 'string', secret: true, label: 'Token' },
        { name: 'db', type: '$.service.db' },
        { name: 'n', type: 'integer', min: 1, max: 5, optional: true, default: 2 },
        { name: 'pick', type: 'string', functions: ['options'] },
        { name: 'http', type: '$.interface.http', customResponse: true },
      ],
      hooks: ['deploy', 'activate'],
      methods: ['helper'],
      hasRun: true,
      hasAdditionalProps: true,
    });
  });

  it('describes CommonJS components and reports code that cannot load as invalid', async () => {
    const cjs = await component('module.exports = { name: "cjs", version: "1", run() {} }');
    expect(await sandbox.describe(cjs.codeId, cjs.bundle)).toMatchObject({ name: 'cjs', hasRun: true });
    const throwing = await component('throw new Error("top-level failure"); export default {}');
    expect(await sandbox.describe(throwing.codeId, throwing.bundle)).toEqual({
      error: expect.objectContaining({ kind: 'invalid', name: 'Error', message: 'top-level failure' }),
    });
    const noDefault = await component('export const run = () => 1;');
    const described = await sandbox.describe(noDefault.codeId, noDefault.bundle);
    expect(described).toEqual({ error: expect.objectContaining({ kind: 'invalid' }) });
    expect('error' in described && described.error.message).toMatch(/must export its definition object/);
    const invoked = await sandbox.invoke(invocation(throwing));
    expect(invoked.error).toMatchObject({ kind: 'invalid', message: 'top-level failure' });
  });

  it('handles many concurrent invocations of many components', async () => {
    const components = await Promise.all(Array.from({ length: 10 }, (_, i) => component(`export default { run(e) { return { i: ${i}, e: e.n } } }`)));
    const results = await Promise.all(Array.from({ length: 400 }, (_, n) => sandbox.invoke(invocation(components[n % 10], { event: { n } }))));
    results.forEach((r, n) => expect(r.returnValue).toEqual({ i: n % 10, e: n }));
  });
});
