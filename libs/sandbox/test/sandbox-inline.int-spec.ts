import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { SandboxInvocation, SandboxSupervisor } from '@app/sandbox';
import { component, invocation } from './sandbox-test.helper';

/**
 * A quick instance's runs go into their isolate with a synchronous entry on the worker's thread
 * (`ComponentIsolate.invokeInline`), cut at `INLINE_SLICE_MS` (10 ms): a cut run is run again the
 * usual way on a fresh isolate, and nothing of the cut one may reach the host (no log, emit or
 * request), since every call it made to the host was still queued behind the entry.
 */
describe('SandboxSupervisor: quick runs go in inline, a slow one is cut and run again', () => {
  let requests = 0;
  let server: Server;
  let url: string;
  let sandbox: SandboxSupervisor;

  beforeAll(async () => {
    server = createServer((req, res) => {
      requests++;
      res.end('pong');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    sandbox = new SandboxSupervisor({ workers: 1, egress: { allow: ['127.0.0.1'] }, defaultLimits: { timeoutMs: 5000 } });
    await sandbox.start();
  });
  afterAll(async () => {
    await sandbox.stop();
    await new Promise((resolve) => server.close(resolve));
  });

  const logLines = (r: { logs: { message: string }[] }) => r.logs.map((l) => l.message);
  /**
   * Runs `inv` until one goes in inline: the first loads the code, and a fresh isolate's first
   * runs may take over INLINE_MAX_CPU_MS compiling the runtime's paths they use.
   */
  const warm = async (inv: SandboxInvocation): Promise<void> => {
    for (let i = 0; i < 5; i++) {
      const r = await sandbox.invoke(inv);
      if (!r.ok) throw new Error(`a warm-up run failed: ${r.error?.message}`);
      if (r.inline) return;
    }
    throw new Error('no run went in inline');
  };

  it('runs a quick instance inline once it is warm, with its logs, emits, state and return value', async () => {
    const c = await component(`let n = 0;
      export default { run(e) { n++; console.log('run ' + e.i); this.$emit({ i: e.i }); return { i: e.i, n }; } }`);
    const results = [];
    for (let i = 0; i < 12; i++) results.push(await sandbox.invoke(invocation(c, { event: { i } })));
    results.forEach((r, i) => {
      expect(r.ok).toBe(true);
      expect(r.returnValue).toEqual({ i, n: i + 1 });
      expect(r.emits).toEqual([expect.objectContaining({ event: { i } })]);
      expect(logLines(r)).toEqual([`run ${i}`]);
    });
    // The first run loads the code and goes in the usual way; once warm, every quick run goes inline.
    expect(results[0].inline).toBeUndefined();
    expect(results.slice(6).map((r) => r.inline)).toEqual(Array(6).fill(true));
  });

  it('an inline run that waits for a timer or a request finishes from those entries, its logs in order', async () => {
    const c = await component(`export default { async run(e) {
      console.log('before');
      if (e.wait) await new Promise((resolve) => setTimeout(resolve, 5));
      const body = e.fetch ? await (await fetch(e.fetch)).text() : null;
      console.log('after');
      return { i: e.i, body }; } }`);
    await warm(invocation(c, { event: { i: 0 } }));
    const waited = await sandbox.invoke(invocation(c, { event: { i: 1, wait: true } }));
    expect(waited).toMatchObject({ ok: true, inline: true, returnValue: { i: 1, body: null } });
    expect(logLines(waited)).toEqual(['before', 'after']);
    // The wait took no CPU: the next run goes inline too, and makes a request from it.
    const before = requests;
    const fetched = await sandbox.invoke(invocation(c, { event: { i: 2, fetch: url } }));
    expect(fetched).toMatchObject({ ok: true, inline: true, returnValue: { i: 2, body: 'pong' } });
    expect(logLines(fetched)).toEqual(['before', 'after']);
    expect(requests).toBe(before + 1);
  });

  it('cuts a run that holds the thread past its slice and runs it again on a fresh isolate; nothing of the cut run is kept', async () => {
    const c = await component(`let n = 0;
      export default { async run(e) {
        n++;
        console.log('run ' + e.i + ' sees ' + n);
        this.$emit({ i: e.i });
        if (e.spin) {
          fetch(${JSON.stringify(url)}).catch(() => {});
          const until = Date.now() + e.spin;
          while (Date.now() < until) {}
        }
        return { i: e.i, n };
      } }`);
    await warm(invocation(c, { event: { i: 1 } }));
    const before = requests;
    const slow = await sandbox.invoke(invocation(c, { event: { i: 2, spin: 40 } }));
    expect(slow.ok).toBe(true);
    // Run again on a fresh isolate (module state starts over), the usual way; one log line, one
    // emit and one request: the cut run's were dropped.
    expect(slow.returnValue).toEqual({ i: 2, n: 1 });
    expect(slow.inline).toBeUndefined();
    expect(logLines(slow)).toEqual(['run 2 sees 1']);
    expect(slow.emits).toEqual([expect.objectContaining({ event: { i: 2 } })]);
    // The request is made once the rerun's entry returns to the host; give it time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(requests).toBe(before + 1);
    // The instance stays out of the inline path for a while, however quick its runs are again.
    const after = await sandbox.invoke(invocation(c, { event: { i: 3 } }));
    expect(after).toMatchObject({ ok: true, returnValue: { i: 3, n: 2 } });
    expect(after.inline).toBeUndefined();
  });

  it('a run that spins forever inline is cut, then ends with its own time limit; the instance runs again after', async () => {
    const c = await component(`let n = 0; export default { run(e) { n++; if (e.loop) for (;;) {} return n; } }`);
    const limits = { timeoutMs: 400, cpuMs: 400 };
    await warm(invocation(c, { event: {}, limits }));
    const looping = await sandbox.invoke(invocation(c, { event: { loop: true }, limits }));
    expect(looping.ok).toBe(false);
    expect(looping.error?.kind).toBe('timeout');
    expect(await sandbox.invoke(invocation(c, { event: {}, limits }))).toMatchObject({ ok: true, returnValue: 1 });
  });

  it('another instance is answered while one spins: the slice bounds how long the thread is held', async () => {
    const spinner = await component(`export default { run(e) { if (e.loop) for (;;) {} return 1; } }`);
    const quick = await component(`export default { run(e) { return e.i; } }`);
    const limits = { timeoutMs: 1500, cpuMs: 1500 };
    await warm(invocation(spinner, { event: {}, limits }));
    await warm(invocation(quick, { event: { i: -1 } }));
    const looping = sandbox.invoke(invocation(spinner, { event: { loop: true }, limits }));
    let settled = false;
    void looping.then(() => (settled = true));
    // Sent after the spinner: answered while the spinner's rerun still spins on isolated-vm's thread.
    for (let i = 0; i < 3; i++) expect((await sandbox.invoke(invocation(quick, { event: { i } }))).returnValue).toBe(i);
    expect(settled).toBe(false);
    expect((await looping).error?.kind).toBe('timeout');
  });

  it('a run that runs out of memory inline fails alone for memory', async () => {
    const c = await component(`export default { run(e) { if (e.grow) { const a = []; for (;;) a.push(new Array(1e5).fill(Math.random())); } return 'ok'; } }`);
    const limits = { memoryMb: 16, timeoutMs: 5000, cpuMs: 5000 };
    await warm(invocation(c, { event: {}, limits }));
    const grown = await sandbox.invoke(invocation(c, { event: { grow: true }, limits }));
    expect(grown.ok).toBe(false);
    // Cut at the slice first or stopped by the memory limit inside it: either way it ends for memory.
    expect(grown.error?.kind).toBe('memory');
    expect(await sandbox.invoke(invocation(c, { event: {}, limits }))).toMatchObject({ ok: true, returnValue: 'ok' });
  });
});
