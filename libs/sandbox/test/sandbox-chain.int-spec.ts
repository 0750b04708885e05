import { SandboxInvocation, SandboxSupervisor } from '@app/sandbox';
import { component, invocation, TestComponent } from './sandbox-test.helper';

/**
 * A workflow step's invocation may carry the steps after it (`chain`): the worker runs them right
 * after it, each with its `{{steps...}}` references resolved against the trigger and the results
 * before it, and answers all the results at once. It stops where the server must act before the
 * next step (a failure, a respond, a flow exit, a send that leaves the server) and where it lacks a
 * step's code. A real worker: the chain logic lives in the worker process.
 */
describe('SandboxSupervisor: chained workflow steps', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] }, defaultLimits: { timeoutMs: 5000 } });
  beforeAll(() => sandbox.start());
  afterAll(() => sandbox.stop());

  const trigger = { event: { n: 7, body: { a: 1 } }, context: { emit_id: 'e_1' } };
  const first = () => component(`export default { type: "action", run({ steps, $ }) {
    $.export("seen", steps.trigger.event.n);
    return { ...steps.trigger.event.body, first: true };
  } }`);
  // Echoes what it was given: its resolved props and the steps it saw.
  const echo = () => component(`export default { type: "action", props: { input: { type: "any" }, label: { type: "string", optional: true } },
    run({ steps, $ }) { $.export("label", this.label); return { input: this.input, saw: Object.keys(steps) }; } }`);
  const step = (c: TestComponent, name: string, props: Record<string, unknown> = {}): { name: string; inv: SandboxInvocation } =>
    ({ name, inv: invocation(c, { instanceId: `p_1/${name}@${c.codeId}`, props, placement: 'p_1' }) });
  const chained = (c: TestComponent, links: { name: string; inv: SandboxInvocation }[]) =>
    sandbox.invoke(invocation(c, { instanceId: `p_1/one@${c.codeId}`, placement: 'p_1', action: { steps: { trigger } }, chain: { name: 'one', links } }));

  it('runs the steps after the first in one call, each with its references resolved against the steps before it', async () => {
    const [a, b] = [await first(), await echo()];
    const r = await chained(a, [
      step(b, 'two', { input: '{{steps.one.$return_value}}', label: 'n={{steps.trigger.event.n}}, seen={{steps.one.seen}}' }),
      step(b, 'three', { input: '{{steps.two.$return_value.input.a}}', label: '{{steps.two.label}}!' }),
    ]);
    expect(r.ok).toBe(true);
    expect(r.returnValue).toEqual({ a: 1, first: true });
    expect(r.chained).toHaveLength(2);
    expect(r.chained![0]).toMatchObject({ ok: true, returnValue: { input: { a: 1, first: true }, saw: ['trigger', 'one'] }, exports: { label: 'n=7, seen=7' } });
    expect(r.chained![1]).toMatchObject({ ok: true, returnValue: { input: 1, saw: ['trigger', 'one', 'two'] }, exports: { label: 'n=7, seen=7!' } });
  });

  it('a step after which the server must act ends the chain: a failure, a respond, a flow exit, an HTTP send', async () => {
    const b = await echo();
    for (const body of [
      'throw new Error("no")',
      '$.respond({ status: 200, body: "hi" })',
      'return $.flow.exit("done")',
      '$.send.http({ url: "https://example.com/x" })',
    ]) {
      const stopper = await component(`export default { type: "action", run({ $ }) { ${body} } }`);
      const r = await chained(await first(), [step(stopper, 'two'), step(b, 'three', { input: 'x' })]);
      expect(r.ok).toBe(true);
      // The stopping step ran, the one after it did not.
      expect(r.chained).toHaveLength(1);
    }
  });

  it('an emit or an SSE message stays in the server: the chain goes on after them', async () => {
    const b = await echo();
    const sender = await component(`export default { type: "action", run({ $ }) {
      $.send.emit({ raw_event: { x: 1 } }); $.send.sse({ channel: "c", payload: 1 }); return 2; } }`);
    const r = await chained(await first(), [step(sender, 'two'), step(b, 'three', { input: '{{steps.two.$return_value}}' })]);
    expect(r.chained).toHaveLength(2);
    expect(r.chained![0].sends).toHaveLength(2);
    expect(r.chained![1].returnValue).toMatchObject({ input: 2 });
  });

  it('a failing first step runs nothing after it', async () => {
    const failing = await component('export default { type: "action", run() { throw new Error("first failed") } }');
    const r = await chained(failing, [step(await echo(), 'two', { input: 1 })]);
    expect(r.ok).toBe(false);
    expect(r.chained).toBeUndefined();
  });

  it('a chained step that kills the worker: the call is sent again without its chain, and the step that killed it fails on its own', async () => {
    const a = await first();
    const bomb = await component('export default { type: "action", run() { Array(1e9).fill(0); } }');
    const pid = sandbox.workerPids()[0];
    const r = await chained(a, [step(bomb, 'two')]);
    // The first step's result, from the replacement worker: the chain was left out when it was sent again.
    expect(sandbox.workerPids()[0]).not.toBe(pid);
    expect(r).toMatchObject({ ok: true, returnValue: { a: 1, first: true } });
    expect(r.chained).toBeUndefined();
    // Run alone (as the runner then runs it), the step is the one blamed.
    const alone = await sandbox.invoke(step(bomb, 'two').inv);
    expect(alone.ok).toBe(false);
    expect(alone.error).toMatchObject({ kind: 'crash' });
  }, 60_000);

  it('keeps the bundles of chained steps the chain did not reach: their next call goes without its bundle', async () => {
    const failing = await component('export default { type: "action", run() { throw new Error("stop here") } }');
    const later = await component('export default { type: "action", run() { return "later ran" } }');
    const r = await chained(failing, [step(later, 'two')]);
    expect(r.chained).toBeUndefined();
    // The supervisor counts the bundle as sent with the chain: the worker must have kept it (were it
    // missing, the worker would ask for it, and a call that carries none could never be answered).
    const alone = await sandbox.invoke(Object.assign(step(later, 'two').inv, { bundle: '' }));
    expect(alone).toMatchObject({ ok: true, returnValue: 'later ran' });
  }, 10_000);

  it('stops before a step whose code the worker was never sent, without failing', async () => {
    const b = await echo();
    const unknown = await component('export default { type: "action", run() { return "ran" } }');
    // The link's bundle left out, as the supervisor leaves it out when it believes the worker has it.
    const missing = { name: 'three', inv: Object.assign(step(unknown, 'three').inv, { bundle: '' }) };
    const r = await chained(await first(), [step(b, 'two', { input: 1 }), missing]);
    expect(r.ok).toBe(true);
    expect(r.chained).toHaveLength(1);
    // The step then runs on its own, sent with its bundle.
    expect(await sandbox.invoke(step(unknown, 'three').inv)).toMatchObject({ ok: true, returnValue: 'ran' });
  });
});
