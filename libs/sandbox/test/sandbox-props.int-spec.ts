import { MAX_PROP_OPTIONS, SandboxSupervisor } from '@app/sandbox';
import { component, invocation, TestComponent } from './sandbox-test.helper';

// An app file and a component spreading a common base, as registry components are written.
const CHAT = `
const app = {
  type: "app",
  app: "chat",
  propDefinitions: {
    channel: {
      type: "string",
      label: "Channel",
      useQuery: true,
      async options({ page, prevContext, query }) {
        const all = this.channels().filter((c) => !query || c.includes(query));
        const start = prevContext && prevContext.next ? prevContext.next : 0;
        const slice = all.slice(start, start + 2);
        return { options: slice.map((c) => ({ label: "#" + c, value: c })), context: { next: start + 2, page, token: this.$auth.token } };
      },
    },
    member: {
      type: "string",
      async options({ channel, page }) {
        return [channel + "-alice", channel + "-bob", "page" + page];
      },
    },
  },
  methods: {
    channels() { return ["general", "random", "dev-ops", "dev-web", "sales"]; },
  },
};
const common = {
  props: { chat: app, mode: { type: "string", options: ["a", "b"], reloadProps: true } },
  methods: { prefix() { return "x-"; } },
};
export default {
  ...common,
  name: "configurable",
  version: "0.0.1",
  props: {
    ...common.props,
    channel: { propDefinition: [app, "channel"] },
    member: { propDefinition: [app, "member", (c) => ({ channel: c.channel })] },
    fixed: { propDefinition: [app, "member", { channel: "fixed" }], label: "Fixed" },
    copied: { propDefinition: [{ ...app, propDefinitions: { ...app.propDefinitions } }, "channel"] },
    own: { type: "string", async options({ page }) { return [this.prefix() + this.mode, "page" + page]; } },
    angry: { type: "string", async options() { const e = new Error("connect the account first"); e.name = "ConfigurationError"; throw e; } },
    broken: { type: "string", options() { return 42; } },
    huge: { type: "string", options() { return Array.from({ length: ${MAX_PROP_OPTIONS + 1} }, (_, i) => String(i)); } },
    spin: { type: "string", options() { for (;;) {} } },
    noisy: { type: "string", options() { this.$emit({ a: 1 }); this.db.set("k", 1); if (this.mode === "x") throw new Error("after emitting"); return ["quiet"]; } },
  },
  async additionalProps(previous) {
    if (this.mode === "b") return { extra: { type: "string", label: "Extra for b " + Object.keys(previous).length, async options() { return [this.mode + "!"]; } }, token: { type: "string", secret: true } };
    if (this.mode === "bad") return 7;
    return {};
  },
  async run() {},
};
`;

describe('SandboxSupervisor: prop configuration (options and additionalProps)', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] }, defaultLimits: { timeoutMs: 1000, cpuMs: 1000 } });
  let chat: TestComponent;
  beforeAll(async () => {
    await sandbox.start();
    chat = await component(CHAT);
  });
  afterAll(() => sandbox.stop());

  const options = (prop: string, props: Record<string, unknown> = {}, at: { page?: number; prevContext?: unknown; query?: string } = {}) =>
    sandbox.invoke(invocation(chat, { entry: 'options', props, propOptions: { prop, page: at.page ?? 0, prevContext: at.prevContext ?? {}, query: at.query } }));

  it("runs an app's propDefinition options with this = the app ($auth and methods), paginated through context", async () => {
    const first = await options('channel', { chat: { $auth: { token: 't1' } } });
    expect(first.ok).toBe(true);
    expect(first.returnValue).toEqual({ options: [{ label: '#general', value: 'general' }, { label: '#random', value: 'random' }], context: { next: 2, page: 0, token: 't1' } });
    const second = await options('channel', { chat: { $auth: { token: 't1' } } }, { page: 1, prevContext: { next: 2 } });
    expect(second.returnValue).toEqual({ options: [{ label: '#dev-ops', value: 'dev-ops' }, { label: '#dev-web', value: 'dev-web' }], context: { next: 4, page: 1, token: 't1' } });
  });

  it('finds the app prop by its slug when the propDefinition names a copy of the app', async () => {
    const r = await options('copied', { chat: { $auth: { token: 't2' } } });
    expect((r.returnValue as { context: { token: string } }).context.token).toBe('t2');
  });

  it('passes the query to an options method of a prop with useQuery', async () => {
    const r = await options('channel', {}, { query: 'dev' });
    expect((r.returnValue as { options: { value: string }[] }).options.map((o) => o.value)).toEqual(['dev-ops', 'dev-web']);
  });

  it('spreads inputValues into the argument: a function of the configured props, or an object', async () => {
    const dependent = await options('member', { channel: 'random' }, { page: 3 });
    expect(dependent.returnValue).toEqual({ options: ['random-alice', 'random-bob', 'page3'], context: null });
    const fixed = await options('fixed', { channel: 'random' });
    expect(fixed.returnValue).toEqual({ options: ['fixed-alice', 'fixed-bob', 'page0'], context: null });
  });

  it("runs a component prop's own options with this = the instance (configured props and methods)", async () => {
    const r = await options('own', { mode: 'a' }, { page: 2 });
    expect(r.returnValue).toEqual({ options: ['x-a', 'page2'], context: null });
  });

  it('returns static options as a page too', async () => {
    expect((await options('mode')).returnValue).toEqual({ options: ['a', 'b'], context: null });
  });

  it('runs additionalProps with the configured props and describes what it adds; options of an added prop work', async () => {
    const none = await sandbox.invoke(invocation(chat, { entry: 'additionalProps', props: { mode: 'a' } }));
    expect(none).toMatchObject({ ok: true, returnValue: [] });
    const added = await sandbox.invoke(invocation(chat, { entry: 'additionalProps', props: { mode: 'b' } }));
    expect(added.ok).toBe(true);
    expect(added.returnValue).toEqual([
      { name: 'extra', type: 'string', label: 'Extra for b 12', functions: ['options'] },
      { name: 'token', type: 'string', secret: true },
    ]);
    expect((await options('extra', { mode: 'b' })).returnValue).toEqual({ options: ['b!'], context: null });
  });

  it('names an unknown prop, a ConfigurationError, a bad answer and a cap as errors', async () => {
    expect((await options('nope', { mode: 'a' })).error).toMatchObject({ name: 'UnknownPropError', message: 'the component has no prop "nope"' });
    const angry = await options('angry');
    expect(angry.error).toEqual({ name: 'ConfigurationError', message: 'connect the account first', kind: 'user' });
    expect((await options('broken')).error).toMatchObject({ name: 'TypeError', message: expect.stringContaining('must be an array or {options, context}') });
    expect((await options('huge')).error).toMatchObject({ name: 'RangeError', message: expect.stringContaining(`more than the ${MAX_PROP_OPTIONS}`) });
    const bad = await sandbox.invoke(invocation(chat, { entry: 'additionalProps', props: { mode: 'bad' } }));
    expect(bad.error).toMatchObject({ name: 'TypeError', message: expect.stringContaining('additionalProps() must return an object of props') });
  });

  it('drops what a configuring call emits or writes, whether it succeeds or fails', async () => {
    const ok = await sandbox.invoke(invocation(chat, { entry: 'options', props: {}, dbProps: ['db'], propOptions: { prop: 'noisy', page: 0, prevContext: {} } }));
    expect(ok).toMatchObject({ ok: true, emits: [], dbWrites: [], returnValue: { options: ['quiet'], context: null } });
    const failed = await sandbox.invoke(invocation(chat, { entry: 'options', props: { mode: 'x' }, dbProps: ['db'], propOptions: { prop: 'noisy', page: 0, prevContext: {} } }));
    expect(failed).toMatchObject({ ok: false, emits: [], dbWrites: [], error: { message: 'after emitting' } });
  });

  it('ends an options method that never returns at the time limit, and the instance serves the next call', async () => {
    const spin = await options('spin');
    expect(spin.ok).toBe(false);
    expect(spin.error).toMatchObject({ kind: 'timeout', name: 'TimeoutError' });
    expect((await options('mode')).ok).toBe(true);
  });
});
