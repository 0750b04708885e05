import { SandboxInvocation, SandboxSupervisor } from '@app/sandbox';
import { configMembersJson, wireInvocation } from '../src/invocation-config';
import { component, invocation, TestComponent } from './sandbox-test.helper';

// A source's invocations share their configuration objects run after run (`stableConfig`): the
// supervisor sends the objects' text, made once per set of objects, and the worker places it in
// the guest's invocation as it is.
const CODE = `export default {
  props: {
    greeting: { type: "string" },
    http: { type: "$.interface.http" },
    db: "$.service.db",
    timer: { type: "$.interface.timer", default: { intervalSeconds: 60 } },
  },
  async run(event) {
    this.db.set("seen", (this.db.get("seen") ?? 0) + 1);
    return { greeting: this.greeting, endpoint: this.http.endpoint, timer: this.timer, db: typeof this.db.get, event };
  },
}`;

function template(greeting: string, endpoint: string): Pick<SandboxInvocation, 'props' | 'httpProps' | 'dbProps' | 'timerProps' | 'stableConfig'> {
  return {
    props: { greeting },
    httpProps: { http: { endpoint, customResponse: false } },
    dbProps: ['db'],
    timerProps: { timer: { intervalSeconds: 15 } },
    stableConfig: true,
  };
}

describe('SandboxSupervisor: a stable configuration travels as its text', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] }, defaultLimits: { timeoutMs: 2000, cpuMs: 2000 } });
  let c: TestComponent;
  beforeAll(async () => {
    await sandbox.start();
    c = await component(CODE);
  });
  afterAll(() => sandbox.stop());

  it('gives the guest the same props run after run, the event as text or as an object, and a new configuration at once', async () => {
    const first = template('Hello', 'https://sluice.example/e/one');
    const expected = { greeting: 'Hello', endpoint: 'https://sluice.example/e/one', timer: { intervalSeconds: 15 }, db: 'function' };
    for (let i = 0; i < 3; i++) {
      const asText = await sandbox.invoke(invocation(c, { ...first, eventJson: JSON.stringify({ n: i, s: 'a "quoted" \\ text' }) }));
      expect(asText.error).toBeUndefined();
      expect(asText.returnValue).toEqual({ ...expected, event: { n: i, s: 'a "quoted" \\ text' } });
      const asObject = await sandbox.invoke(invocation(c, { ...first, event: { n: i } }));
      expect(asObject.returnValue).toEqual({ ...expected, event: { n: i } });
    }
    // A deploy or update makes new objects: the guest sees them from the next run on.
    const second = template('Bonjour', 'https://sluice.example/e/two');
    const updated = await sandbox.invoke(invocation(c, { ...second, event: { n: 9 } }));
    expect(updated.returnValue).toEqual({ greeting: 'Bonjour', endpoint: 'https://sluice.example/e/two', timer: { intervalSeconds: 15 }, db: 'function', event: { n: 9 } });
    // The first configuration's objects still give their own text.
    const again = await sandbox.invoke(invocation(c, { ...first, event: { n: 10 } }));
    expect(again.returnValue).toEqual({ ...expected, event: { n: 10 } });
  });
});

describe('wireInvocation', () => {
  const base: SandboxInvocation = { codeId: 'c1', instanceId: 'dc_a@c1', bundle: 'code', entry: 'run', eventJson: '{"a":1}', db: {}, dbBytes: 0, ...template('Hi', 'https://x.example/e/k') } as SandboxInvocation;

  it('sends a stable configuration as the JSON members of its objects, made once per set of objects', () => {
    const wire = wireInvocation(base, true);
    expect(JSON.parse(JSON.stringify(wire))).toEqual({ codeId: 'c1', instanceId: 'dc_a@c1', bundle: 'code', entry: 'run', eventJson: '{"a":1}', db: {}, dbBytes: 0, configJson: wire.configJson });
    expect(JSON.parse(`{${wire.configJson}}`)).toEqual({ props: base.props, httpProps: base.httpProps, dbProps: base.dbProps, timerProps: base.timerProps });
    expect(wire.configJson).toBe(configMembersJson(base));
    // The bundle is left out as before once the worker has it; the text is the same.
    const known = wireInvocation({ ...base, eventJson: '{"a":2}' }, false);
    expect(known.bundle).toBe('');
    expect(known.configJson).toBe(wire.configJson);
    // The same props with another httpProps object is another configuration.
    const other = wireInvocation({ ...base, httpProps: { http: { endpoint: 'https://x.example/e/other', customResponse: true } } }, true);
    expect(JSON.parse(`{${other.configJson}}`).httpProps).toEqual({ http: { endpoint: 'https://x.example/e/other', customResponse: true } });
    expect(wireInvocation(base, true).configJson).toContain('https://x.example/e/k');
  });

  it('sends the objects of any other invocation as they are', () => {
    const plain = { ...base, stableConfig: undefined };
    expect(wireInvocation(plain, true)).toBe(plain);
    const notStable = wireInvocation({ ...base, stableConfig: false }, false);
    expect(notStable).toMatchObject({ bundle: '', props: base.props, httpProps: base.httpProps, dbProps: base.dbProps, timerProps: base.timerProps });
    expect(notStable.configJson).toBeUndefined();
  });
});
