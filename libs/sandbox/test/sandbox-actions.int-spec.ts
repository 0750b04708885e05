import { SandboxSupervisor } from '@app/sandbox';
import { component, invocation } from './sandbox-test.helper';

const LIMITS = {
  maxEmits: 3,
  maxEmitBytes: 300,
  maxRunEmitBytes: 500,
  maxDbWriteBytesPerRun: 300,
  maxDbBytesPerSource: 1000,
  maxDbKeyChars: 16,
  maxEmitIdChars: 8,
  maxEmitNameChars: 8,
  maxEmitSummaryChars: 40,
};

// Real worker processes running the compiled sandbox (dist/): `npm test` builds first.
describe('SandboxSupervisor: actions run({ $, steps })', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] }, outputLimits: LIMITS });
  beforeAll(() => sandbox.start());
  afterAll(() => sandbox.stop());

  async function runAction(code: string, steps: Record<string, unknown> = {}, props: Record<string, unknown> = {}, extra: Parameters<typeof invocation>[1] = {}) {
    return sandbox.invoke(invocation(await component(code), { props, action: { steps }, ...extra }));
  }

  it('passes $ and steps, sets this.<prop>, and returns the value, exports and summary', async () => {
    const result = await runAction(`export default {
      name: "t", version: "0.0.1", type: "action",
      props: { factor: { type: "integer" }, label: { type: "string", optional: true, default: "n" } },
      async run({ $, steps }) {
        const doubled = steps.trigger.event.values.map((v) => v * this.factor);
        $.export("doubled", doubled);
        $.export("doubled", doubled.concat([0]));
        $.export("$summary", "Doubled " + doubled.length + " values");
        return { [this.label]: doubled.length, previous: steps.first.$return_value };
      },
    }`, { trigger: { event: { values: [1, 2, 3] } }, first: { $return_value: 'x' } }, { factor: 2 });
    expect(result.ok).toBe(true);
    expect(result.returnValue).toEqual({ n: 3, previous: 'x' });
    expect(result.exports).toEqual({ doubled: [2, 4, 6, 0] });
    expect(result.summary).toBe('Doubled 3 values');
    expect(result.sends).toEqual([]);
    expect(result.flowExit).toBeUndefined();
  });

  it('records $.flow.exit(reason) and drops its marker as a return value', async () => {
    const result = await runAction(`export default { type: "action", run({ $ }) { $.export("before", 1); return $.flow.exit("nothing to do") } }`);
    expect(result).toMatchObject({ ok: true, flowExit: { reason: 'nothing to do' }, exports: { before: 1 } });
    expect(result.returnValue).toBeUndefined();
  });

  it('queues each $.send kind validated, in call order', async () => {
    const result = await runAction(`export default { type: "action", run({ $ }) {
      $.send.http({ method: "post", url: "https://example.com/hook?a=1", headers: { "x-n": 2 }, params: { b: "2" }, data: { hello: 1 } });
      $.send.email({ subject: "Hi", text: "body" });
      $.send.emit({ raw_event: { n: 1 }, name: "chan" });
    } }`);
    expect(result.ok).toBe(true);
    expect(result.sends).toEqual([
      { kind: 'http', params: { method: 'POST', url: 'https://example.com/hook?a=1', headers: { 'x-n': '2' }, params: { b: '2' }, data: { hello: 1 } } },
      { kind: 'email', params: { subject: 'Hi', text: 'body' } },
      { kind: 'emit', params: { raw_event: { n: 1 }, name: 'chan' } },
    ]);
    const more = await runAction(`export default { type: "action", run({ $ }) {
      $.send.s3({ bucket: "my-bucket", prefix: "runs/", payload: [1] });
      $.send.sse({ channel: "live", payload: { a: 1 } });
    } }`);
    expect(more.sends).toEqual([
      { kind: 's3', params: { bucket: 'my-bucket', prefix: 'runs/', payload: [1] } },
      { kind: 'sse', params: { channel: 'live', payload: { a: 1 } } },
    ]);
  });

  it.each([
    ['an ftp URL', '$.send.http({ url: "ftp://example.com/x" })', /url must be an absolute http or https URL/],
    ['no URL', '$.send.http({ method: "GET" })', /url is required/],
    ['an unknown method', '$.send.http({ method: "BREW", url: "https://example.com" })', /method must be one of/],
    ['a header with a line break', '$.send.http({ url: "https://example.com", headers: { a: "x\\r\\nb: y" } })', /must not contain line breaks/],
    ['an email subject with a line break', '$.send.email({ subject: "a\\nBcc: x@y.z", text: "t" })', /subject must not contain line breaks/],
    ['an email without a body', '$.send.email({ subject: "s" })', /text or html is required/],
    ['a bad bucket', '$.send.s3({ bucket: "No_Such", prefix: "", payload: 1 })', /bucket must be a valid S3 bucket name/],
    ['an emit without raw_event', '$.send.emit({ event: 1 })', /raw_event is required/],
    ['an sse without channel', '$.send.sse({ payload: 1 })', /channel is required/],
    ['a non-object', '$.send.http("https://example.com")', /takes an object/],
  ])('fails the step at the call for %s, and reports no sends', async (_what, call, message) => {
    const result = await runAction(`export default { type: "action", run({ $ }) { $.send.emit({ raw_event: "first" }); ${call}; } }`);
    expect(result.ok).toBe(false);
    expect(result.error?.kind).toBe('user');
    expect(result.error?.message).toMatch(message);
    expect(result.sends).toBeUndefined();
  });

  it('caps the number and the bytes of sends like emits, and the step may catch the refusal', async () => {
    const counted = await runAction(`export default { type: "action", run({ $ }) {
      let refused = "";
      for (let i = 0; i < 5; i++) { try { $.send.emit({ raw_event: i }) } catch (e) { refused = e.message } }
      return refused;
    } }`);
    expect(counted.ok).toBe(true);
    expect(counted.sends).toHaveLength(3);
    expect(counted.returnValue).toContain('at most 3 sends (SLUICE_MAX_EMITS_PER_RUN=3)');
    const big = await runAction(`export default { type: "action", run({ $ }) { $.send.sse({ channel: "c", payload: "x".repeat(400) }) } }`);
    expect(big.ok).toBe(false);
    expect(big.error?.message).toMatch(/more than the 300 bytes allowed per send/);
  });

  it('records $.respond with immediate, once', async () => {
    const result = await runAction(`export default { type: "action", run({ $ }) {
      $.respond({ status: "201", headers: { "x-a": 1 }, body: { ok: true }, immediate: true });
    } }`);
    expect(result.ok).toBe(true);
    expect(result.httpResponse).toEqual({
      status: 201, headers: { 'x-a': '1', 'content-type': 'application/json; charset=utf-8' }, body: '{"ok":true}', immediate: true,
    });
    const twice = await runAction(`export default { type: "action", run({ $ }) { $.respond({ status: 200 }); $.respond({ status: 200 }) } }`);
    expect(twice.ok).toBe(false);
    expect(twice.error?.message).toMatch(/already called/);
    expect(twice.httpResponse).toEqual({ status: 200, headers: {} });
  });

  it('keeps a failed step\'s exports and summary, with a ConfigurationError carrying no stack', async () => {
    const result = await runAction(`class ConfigurationError extends Error { constructor(m) { super(m); this.name = "ConfigurationError" } }
    export default { type: "action", props: { n: { type: "any" } }, run({ $ }) {
      $.export("seen", this.n); $.export("$summary", "x".repeat(100));
      throw new ConfigurationError("n must be positive");
    } }`, {}, { n: -1 });
    expect(result.ok).toBe(false);
    expect(result.error).toEqual({ name: 'ConfigurationError', message: 'n must be positive', kind: 'user' });
    expect(result.exports).toEqual({ seen: -1 });
    expect(result.summary).toHaveLength(40);
  });

  it('refuses reserved export names', async () => {
    const result = await runAction(`export default { type: "action", run({ $ }) { $.export("$return_value", 1) } }`);
    expect(result.ok).toBe(false);
    expect(result.error?.message).toMatch(/reserved/);
  });

  it('gives an action its db when the host names a db prop', async () => {
    const result = await runAction(`export default { type: "action", props: { db: "$.service.db" }, run() {
      const n = (this.db.get("n") ?? 0) + 1; this.db.set("n", n); return n;
    } }`, {}, {}, { dbProps: ['db'], db: { n: 4 } });
    expect(result).toMatchObject({ ok: true, returnValue: 5, dbWrites: [{ key: 'n', value: 5 }] });
  });

  it('runs a source as before when no action is given: run(event), no action fields', async () => {
    const c = await component('export default { run(event) { return event } }');
    const result = await sandbox.invoke(invocation(c, { event: { a: 1 } }));
    expect(result).toMatchObject({ ok: true, returnValue: { a: 1 } });
    expect(result.exports).toBeUndefined();
    expect(result.sends).toBeUndefined();
  });
});

describe('Buffer in component code', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] } });
  beforeAll(() => sandbox.start());
  afterAll(() => sandbox.stop());

  it('is a global without an import, the same Buffer the buffer module gives', async () => {
    const c = await component(`import { Buffer as Imported } from "buffer";
    export default { run() {
      const b = Buffer.from("héllo", "utf8");
      return { b64: b.toString("base64"), back: Buffer.from(b.toString("base64"), "base64").toString(), same: Buffer === Imported, isBuffer: Buffer.isBuffer(Imported.from("x")) };
    } }`);
    const result = await sandbox.invoke(invocation(c));
    expect(result).toMatchObject({ ok: true, returnValue: { b64: Buffer.from('héllo').toString('base64'), back: 'héllo', same: true, isBuffer: true } });
  });

  it('is seen by typeof checks and on globalThis, as in Node', async () => {
    const c = await component('export default { run() { return [typeof Buffer, globalThis.Buffer === Buffer, Object.keys(globalThis).includes("Buffer")] } }');
    expect(await sandbox.invoke(invocation(c))).toMatchObject({ ok: true, returnValue: ['function', true, false] });
  });
});
