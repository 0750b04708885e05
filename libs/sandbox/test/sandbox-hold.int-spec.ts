import { SandboxSupervisor } from '@app/sandbox';
import { component, invocation } from './sandbox-test.helper';

/**
 * A call made with a hold (`invoke(inv, holdMs)`) waits up to that long for the next call to share
 * its write to the worker; the runs of one instance written together go into its isolate as one
 * entry (`entryRuns`). A real worker process and isolate.
 */
describe('SandboxSupervisor: a held call shares its write and its isolate entry with the next one', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] }, defaultLimits: { timeoutMs: 2000 } });
  beforeAll(() => sandbox.start());
  afterAll(() => sandbox.stop());

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('two runs 40 ms apart: held, they run in one entry; not held, each in its own', async () => {
    const c = await component(`let n = 0; export default { run(e) { n++; return { i: e.i, n }; } }`);
    // Warm: the instance's isolate exists before the runs that are compared.
    expect((await sandbox.invoke(invocation(c, { event: { i: 0 } }))).ok).toBe(true);

    let firstBack = 0;
    const first = sandbox.invoke(invocation(c, { event: { i: 1 } }), 500).then((r) => ((firstBack = performance.now()), r));
    await sleep(40);
    const secondSent = performance.now();
    const second = sandbox.invoke(invocation(c, { event: { i: 2 } }), 500);
    const [a, b] = await Promise.all([first, second]);
    expect(a.returnValue).toEqual({ i: 1, n: 2 });
    expect(b.returnValue).toEqual({ i: 2, n: 3 });
    expect([a.entryRuns, b.entryRuns]).toEqual([2, 2]);
    // The first waited for the second: it was not run (and answered) before the second was sent.
    expect(firstBack).toBeGreaterThan(secondSent);

    const c1 = await sandbox.invoke(invocation(c, { event: { i: 3 } }));
    await sleep(40);
    const c2 = await sandbox.invoke(invocation(c, { event: { i: 4 } }));
    expect([c1.entryRuns, c2.entryRuns]).toEqual([1, 1]);
  });

  it('a held run with no company runs once its hold is up', async () => {
    const c = await component(`export default { run(e) { return e.i; } }`);
    await sandbox.invoke(invocation(c, { event: { i: 0 } }));
    const sent = performance.now();
    const r = await sandbox.invoke(invocation(c, { event: { i: 1 } }), 150);
    expect(r.returnValue).toBe(1);
    expect(r.entryRuns).toBe(1);
    expect(performance.now() - sent).toBeGreaterThanOrEqual(140);
  });

  it('a call without a hold takes a held one along at once (a hook, a custom response)', async () => {
    const c = await component(`export default { run(e) { return e.i; } }`);
    await sandbox.invoke(invocation(c, { event: { i: 0 } }));
    const sent = performance.now();
    const held = sandbox.invoke(invocation(c, { event: { i: 1 } }), 10_000);
    await sleep(20);
    const urgent = await sandbox.invoke(invocation(c, { event: { i: 2 } }));
    const r = await held;
    expect([r.returnValue, urgent.returnValue]).toEqual([1, 2]);
    // Well before the 10 s hold: written with the call that did not wait.
    expect(performance.now() - sent).toBeLessThan(5_000);
  });

  it('holds nothing while the worker has another call in flight (it is awake and runs queue anyway)', async () => {
    const slow = await component(`export default { async run() { await new Promise((r) => setTimeout(r, 300)); return 'slow'; } }`);
    const quick = await component(`export default { run(e) { return e.i; } }`);
    await sandbox.invoke(invocation(quick, { event: { i: 0 } }));
    const inFlight = sandbox.invoke(invocation(slow, { event: {} }));
    await sleep(20);
    const sent = performance.now();
    const r = await sandbox.invoke(invocation(quick, { event: { i: 1 } }), 10_000);
    expect(r.returnValue).toBe(1);
    // Answered while the slow run still waits: its write did not wait for company.
    expect(performance.now() - sent).toBeLessThan(250);
    expect((await inFlight).returnValue).toBe('slow');
  });
});
