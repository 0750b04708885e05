import { SandboxSupervisor } from '@app/sandbox';
import { component, invocation, TestComponent } from './sandbox-test.helper';

const SHORT = { timeoutMs: 800, cpuMs: 800 };

/** Finds `count` trivial components that the supervisor routes to worker `index`. */
async function componentsOnWorker(sandbox: SandboxSupervisor, index: number, count: number, tag: string): Promise<TestComponent[]> {
  const found: TestComponent[] = [];
  for (let n = 0; found.length < count; n++) {
    const c = await component(`export default { run(e) { return { ${tag}: ${n}, e } } }`);
    if (sandbox.workerIndexFor(c.codeId) === index) found.push(c);
  }
  return found;
}

describe('SandboxSupervisor: hostile code', () => {
  const sandbox = new SandboxSupervisor({ workers: 2, egress: { allow: [] } });
  let healthy: TestComponent;
  beforeAll(async () => {
    await sandbox.start();
    healthy = await component('export default { run(e) { return { healthy: e.n } } }');
  });
  afterAll(() => sandbox.stop());

  async function expectHealthy(n: number): Promise<void> {
    const result = await sandbox.invoke(invocation(healthy, { event: { n } }));
    expect(result).toMatchObject({ ok: true, returnValue: { healthy: n } });
  }

  it('ends a synchronous infinite loop; the worker survives and serves the next call', async () => {
    const pids = sandbox.workerPids();
    const loop = await component('export default { run() { while (true) {} } }');
    const started = Date.now();
    const result = await sandbox.invoke(invocation(loop, { limits: { timeoutMs: 300, cpuMs: 10_000 } }));
    expect(Date.now() - started).toBeLessThan(3000);
    expect(result.ok).toBe(false);
    expect(result.error).toMatchObject({ kind: 'timeout', name: 'TimeoutError' });
    expect(result.logs.at(-1)?.message).toMatch(/TimeoutError: the run did not finish within 300 ms/);
    const cpuBound = await sandbox.invoke(invocation(loop, { limits: { timeoutMs: 10_000, cpuMs: 200 } }));
    expect(cpuBound.error).toMatchObject({ kind: 'cpu', name: 'CpuLimitError' });
    expect(cpuBound.cpuMs).toBeGreaterThanOrEqual(150);
    await expectHealthy(1);
    expect(sandbox.workerPids()).toEqual(pids);
  });

  it('ends a loop that starts after an await, after a host round trip and inside a timer callback', async () => {
    const afterAwait = await component('export default { async run() { await null; while (true) {} } }');
    expect((await sandbox.invoke(invocation(afterAwait, { limits: SHORT }))).error?.kind).toMatch(/^(timeout|cpu)$/);
    const afterTimer = await component('export default { async run() { await new Promise((r) => setTimeout(r, 5)); while (true) {} } }');
    expect((await sandbox.invoke(invocation(afterTimer, { limits: SHORT }))).error?.kind).toMatch(/^(timeout|cpu)$/);
    const inTimer = await component('export default { async run() { await new Promise(() => setTimeout(() => { while (true) {} }, 5)); } }');
    expect((await sandbox.invoke(invocation(inTimer, { limits: SHORT }))).error?.kind).toMatch(/^(timeout|cpu)$/);
    const inInterval = await component('export default { async run() { let n = 0; setInterval(() => { if (++n === 3) while (true) {} }, 1); await new Promise(() => {}); } }');
    expect((await sandbox.invoke(invocation(inInterval, { limits: SHORT }))).error?.kind).toMatch(/^(timeout|cpu)$/);
    // A CPU budget smaller than the wall clock catches a loop the wall clock would let run on.
    const cpu = await sandbox.invoke(invocation(afterTimer, { limits: { timeoutMs: 20_000, cpuMs: 200 } }));
    expect(cpu.error?.kind).toBe('cpu');
    await expectHealthy(2);
  });

  it('ends a run whose promise never settles by the wall clock', async () => {
    const never = await component('export default { async run() { console.log("waiting"); await new Promise(() => {}); } }');
    const result = await sandbox.invoke(invocation(never, { limits: { timeoutMs: 300 } }));
    expect(result.error).toMatchObject({ kind: 'timeout' });
    expect(result.durationMs).toBeGreaterThanOrEqual(290);
    expect(result.logs.map((l) => l.message)).toEqual(['waiting', expect.stringMatching(/^TimeoutError/)]);
    // The same code runs again on a fresh isolate.
    const again = await sandbox.invoke(invocation(never, { limits: { timeoutMs: 100 } }));
    expect(again.error?.kind).toBe('timeout');
  });

  it('ends a top-level infinite loop while loading', async () => {
    const loading = await component('while (true) {}\nexport default { run() {} }');
    const result = await sandbox.invoke(invocation(loading, { limits: { timeoutMs: 300 } }));
    expect(result.error?.kind).toMatch(/^(timeout|cpu)$/);
    await expectHealthy(3);
  });

  it('reports unbounded allocation as a memory error', async () => {
    const hog = await component('export default { run() { const all = []; while (true) all.push({ n: Math.random(), s: "x" + Math.random() }); } }');
    const result = await sandbox.invoke(invocation(hog, { limits: { memoryMb: 32, timeoutMs: 20_000, cpuMs: 20_000 } }));
    expect(result.error).toMatchObject({ kind: 'memory', name: 'MemoryLimitError' });
    expect(result.error?.message).toMatch(/32 MB/);
    const afterAwait = await component('export default { async run() { await new Promise((r) => setTimeout(r, 1)); const all = []; for (;;) all.push(new Array(1000).fill(1)); } }');
    const late = await sandbox.invoke(invocation(afterAwait, { limits: { memoryMb: 32, timeoutMs: 20_000, cpuMs: 20_000 } }));
    expect(late.error?.kind).toBe('memory');
    await expectHealthy(4);
  });

  it('a catastrophic OOM kills only its worker: its call fails with crash, the other worker is unaffected, new calls are served', async () => {
    const pids = sandbox.workerPids();
    const bomb = await component('export default { run() { Array(1e9).fill(0); } }');
    const bombWorker = sandbox.workerIndexFor(bomb.codeId);
    const otherWorker = 1 - bombWorker;
    const [bystander] = await componentsOnWorker(sandbox, otherWorker, 1, 'bystander');
    const [neighbour] = await componentsOnWorker(sandbox, bombWorker, 1, 'neighbour');
    const slow = await component('export default { async run() { await new Promise((r) => setTimeout(r, 300)); return "slow done"; } }');
    const slowOnOther = sandbox.workerIndexFor(slow.codeId) === otherWorker ? slow : null;

    const [crashed, concurrent, concurrentSlow] = await Promise.all([
      sandbox.invoke(invocation(bomb)),
      sandbox.invoke(invocation(bystander, { event: 1 })),
      slowOnOther ? sandbox.invoke(invocation(slowOnOther)) : Promise.resolve(null),
    ]);
    expect(crashed.ok).toBe(false);
    expect(crashed.error).toMatchObject({ kind: 'crash' });
    expect(crashed.error?.message).toMatch(/out-of-memory|killed|exited/i);
    expect(concurrent).toMatchObject({ ok: true, returnValue: { e: 1 } });
    if (concurrentSlow) expect(concurrentSlow.returnValue).toBe('slow done');

    const after = sandbox.workerPids();
    expect(after[otherWorker]).toBe(pids[otherWorker]);
    // The replacement worker (new pid) serves code it never saw, and the old code again.
    const served = await sandbox.invoke(invocation(neighbour, { event: 2 }));
    expect(served).toMatchObject({ ok: true, returnValue: { e: 2 } });
    expect(sandbox.workerPids()[bombWorker]).not.toBe(pids[bombWorker]);
    expect(sandbox.workerRestarts()[bombWorker]).toBeGreaterThanOrEqual(1);
    await expectHealthy(5);
  });

  it('has no WebAssembly, SharedArrayBuffer, require or host objects; Buffer and process are the bundled shims', async () => {
    const probe = await component(`export default { run() {
      return {
        webAssembly: typeof WebAssembly, sharedArrayBuffer: typeof SharedArrayBuffer,
        process: typeof process, require: typeof globalThis.require, global: typeof global, buffer: typeof Buffer,
        globalBuffer: typeof globalThis.Buffer, bufferOverUint8Array: Object.getPrototypeOf(Buffer) === Uint8Array,
        globalProcess: typeof globalThis.process, importScripts: typeof importScripts,
        processIsShim: [process.platform, process.version, Object.keys(process.env).join(), (() => { try { process.binding("fs"); return "bound"; } catch { return "refused"; } })()],
        // esbuild leaves a require shim in bundles; it refuses everything at run time.
        dynamicRequire: (() => { const name = "f" + "s"; try { require(name); return "loaded"; } catch { return "refused"; } })(),
      };
    } }`);
    expect((await sandbox.invoke(invocation(probe))).returnValue).toEqual({
      webAssembly: 'undefined', sharedArrayBuffer: 'undefined', process: 'object', require: 'undefined',
      global: 'undefined', buffer: 'function', globalBuffer: 'function', bufferOverUint8Array: true,
      globalProcess: 'undefined', importScripts: 'undefined', dynamicRequire: 'refused',
      // Only a stand-in: nothing of the host's Node, env empty but for the component id.
      processIsShim: ['sandbox', '', 'PD_COMPONENT', 'refused'],
    });
  });

  it('exposes no isolated-vm Reference, ExternalCopy or host Callback anywhere reachable from globalThis', async () => {
    const walker = await component(`export default { async run() {
      const IVM = ["Reference", "ExternalCopy", "Callback", "Isolate", "Context", "Script", "Module", "NativeModule", "Dereference", "Copy"];
      const seen = new Set();
      const suspicious = [];
      let visited = 0;
      const queue = [[globalThis, "globalThis"]];
      while (queue.length) {
        const [value, path] = queue.shift();
        if ((typeof value !== "object" && typeof value !== "function") || value === null || seen.has(value)) continue;
        seen.add(value);
        visited++;
        if (typeof value === "function") {
          const source = Function.prototype.toString.call(value);
          if (/^sluiceHost/.test(value.name) || (/\\[native code\\]/.test(source) && /sluiceHost/.test(source))) suspicious.push(path);
        }
        const ctor = Object.getPrototypeOf(value)?.constructor;
        if (ctor && IVM.includes(ctor.name) && ctor !== Function && ctor !== Object) suspicious.push(path + " (" + ctor.name + ")");
        for (const method of ["applySync", "applySyncPromise", "derefInto", "copyInto", "getSync", "setSync"]) {
          try { if (typeof value[method] === "function") suspicious.push(path + "." + method); } catch {}
        }
        queue.push([Object.getPrototypeOf(value), path + ".__proto__"]);
        for (const key of Reflect.ownKeys(value)) {
          const descriptor = Object.getOwnPropertyDescriptor(value, key);
          const name = path + "." + String(key);
          if (!descriptor) continue;
          if ("value" in descriptor) queue.push([descriptor.value, name]);
          if (descriptor.get) { queue.push([descriptor.get, name + "<get>"]); try { queue.push([value[key], name]); } catch {} }
          if (descriptor.set) queue.push([descriptor.set, name + "<set>"]);
        }
      }
      return { visited, suspicious, globals: Object.getOwnPropertyNames(globalThis).length };
    } }`);
    const result = await sandbox.invoke(invocation(walker));
    expect(result.error).toBeUndefined();
    const walked = result.returnValue as { visited: number; suspicious: string[]; globals: number };
    expect(walked.suspicious).toEqual([]);
    expect(walked.visited).toBeGreaterThan(500);
    expect(walked.globals).toBeGreaterThan(50);
  });

  it('drops __proto__, constructor and prototype keys of guest JSON on the host', async () => {
    const polluter = await component(`export default {
      props: { db: "$.service.db" },
      run() {
        const evil = JSON.parse('{"__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}, "nested": {"__proto__": {"polluted": "yes"}, "ok": 1}}');
        this.$emit(evil, { id: 1 });
        this.db.set("evil", evil);
        return evil;
      },
    }`);
    const result = await sandbox.invoke(invocation(polluter, { dbProps: ['db'] }));
    expect(result.ok).toBe(true);
    const event = result.emits[0].event as Record<string, unknown>;
    expect(Object.keys(event)).toEqual(['nested']);
    expect(Object.keys(event.nested as object)).toEqual(['ok']);
    expect(Object.prototype.hasOwnProperty.call(event, '__proto__')).toBe(false);
    expect(Object.keys(result.returnValue as object)).toEqual(['nested']);
    expect(Object.keys(result.dbWrites[0].value as object)).toEqual(['nested']);
    // Results are parsed in Node's own realm, not jest's: check the prototype that objects there get.
    const hostPrototype = Object.getPrototypeOf(event);
    expect(hostPrototype.constructor.name).toBe('Object');
    expect(Object.getPrototypeOf(hostPrototype)).toBeNull();
    expect(hostPrototype.polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('cannot reach the host through Function constructors or error stacks', async () => {
    const escape = await component(`export default { run() {
      const viaFunction = (() => { try { return typeof Function("return process")(); } catch (e) { return "threw"; } })();
      const viaConstructor = (() => { try { return typeof this.constructor.constructor("return this")().process; } catch (e) { return "threw"; } })();
      let stack = "";
      try { new URL("not a url"); } catch (e) { stack = String(e.stack); }
      return { viaFunction, viaConstructor, hostPathsInStack: /node_modules|\\/work\\/|dist\\//.test(stack) };
    } }`);
    expect((await sandbox.invoke(invocation(escape))).returnValue).toEqual({ viaFunction: 'threw', viaConstructor: 'undefined', hostPathsInStack: false });
  });

  it('keeps one run from flooding the host with logs', async () => {
    const chatty = await component('export default { run() { for (let i = 0; i < 5000; i++) console.log("line", i, "x".repeat(100)); console.log("y".repeat(100000)); } }');
    const result = await sandbox.invoke(invocation(chatty));
    expect(result.ok).toBe(true);
    expect(result.logs.length).toBeLessThanOrEqual(1002);
    expect(result.logs.at(-1)?.message).toMatch(/more than 1000 console lines/);
  });

  it('keeps at most 256 KB of console output per run, then says the logs were truncated', async () => {
    const wordy = await component('export default { run() { for (let i = 0; i < 200; i++) console.log(String(i).padEnd(16 * 1024, "z")); return "done"; } }');
    const result = await sandbox.invoke(invocation(wordy));
    expect(result).toMatchObject({ ok: true, returnValue: 'done' });
    const kept = result.logs.slice(0, -1).reduce((n, l) => n + l.message.length, 0);
    expect(kept).toBeLessThanOrEqual(256 * 1024);
    expect(kept).toBeGreaterThan(200 * 1024);
    expect(result.logs.at(-1)).toMatchObject({ level: 'warn', message: expect.stringMatching(/logs truncated: a run keeps at most 256 KB/) });
  });
});
