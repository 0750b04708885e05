import { SandboxSupervisor } from '@app/sandbox';
import { component, invocation, TestComponent } from './sandbox-test.helper';

// Answers with the event's number and the length of its padding: what it was handed arrived whole.
const ECHO = 'export default { run(e) { return { n: e.n, padded: e.pad.length }; } }';

describe('SandboxSupervisor: calls whose text is too long for one IPC write', () => {
  const sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: [] } });
  let echo: TestComponent;
  beforeAll(async () => {
    await sandbox.start();
    echo = await component(ECHO);
  });
  afterAll(() => sandbox.stop());

  it('65 calls of 9 MB made in one turn (585 MB of text, past the 512 MB a string may hold) are written in parts and all run', async () => {
    // One string shared by every event: the test holds 9 MB; the write's text would be 585 MB.
    const pad = 'x'.repeat(9 * 1024 * 1024);
    const calls = [...Array(65).keys()].map((n) => sandbox.invoke(invocation(echo, { event: { n, pad } })));
    const results = await Promise.all(calls);
    expect(results.filter((r) => !r.ok).map((r) => r.error)).toEqual([]);
    expect(results.map((r) => r.returnValue)).toEqual([...Array(65).keys()].map((n) => ({ n, padded: pad.length })));
    // The worker that took them is the one that runs the next call: none of it killed the worker.
    expect(sandbox.workerRestarts()[0]).toBe(0);
    expect(await sandbox.invoke(invocation(echo, { event: { n: 65, pad: '' } }))).toMatchObject({ ok: true, returnValue: { n: 65, padded: 0 } });
  }, 120_000);
});
