import { readFileSync } from 'node:fs';
import { api, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';
import { ECHO_SOURCE } from './support/fixtures';

/** The server's sandbox workers: its direct children (Linux) that run the worker script (esbuild's service is another). */
function childrenOf(pid: number): number[] {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return children.filter((c) => readFileSync(`/proc/${c}/cmdline`, 'utf8').includes('sandbox-worker.main.js'));
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('sandbox workers are kept per account while workers are left to start', () => {
  let server: SluiceProcess;
  let keyB: string;

  beforeAll(async () => {
    const dir = newDataDir();
    await runAdmin(dir, ['create-account', '--name', 'alice', '--key', 'sk_alice_workers_0123456789']);
    keyB = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'bob'])).api_key;
    // Two workers at most, one started with the server (the defaults).
    server = await startSluice({ dataDir: dir, apiKey: 'sk_alice_workers_0123456789', env: { SLUICE_SANDBOX_WORKERS: '2', SLUICE_SANDBOX_MIN_WORKERS: '1' } });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it("a second account's source runs in a worker started for it; both accounts' sources keep running", async () => {
    const a = api(server.url, server.apiKey);
    const b = api(server.url, keyB);
    const pid = server.proc.pid!;
    expect(childrenOf(pid)).toHaveLength(1);

    const post = async (url: string, n: number) => (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) })).status;
    const emitted = (c: ReturnType<typeof api>, id: string) => async () =>
      ((await c.get(`/v1/sources/${id}/event_summaries`, { expand: 'event' })).body.data as { event: { n: number } }[]).map((e) => e.event.n).sort((x, y) => x - y);

    // Account A: two sources, deployed and run; every call (deploy hooks, runs) stays in the first worker.
    const a1 = (await a.post('/v1/sources', { component_code: ECHO_SOURCE })).body.data;
    const a2 = (await a.post('/v1/sources', { component_code: ECHO_SOURCE })).body.data;
    for (const n of [1, 2, 3]) expect(await post(a1.endpoint_url, n)).toBe(200);
    expect(await post(a2.endpoint_url, 4)).toBe(200);
    await until(emitted(a, a1.id), (ns) => ns.length === 3, "account A's events");
    await until(emitted(a, a2.id), (ns) => ns.length === 1, "account A's second source's event");
    const [first] = childrenOf(pid);
    expect(childrenOf(pid)).toEqual([first]);

    // Account B's source: the first worker holds A's instances, so a second starts for B's.
    const b1 = (await b.post('/v1/sources', { component_code: ECHO_SOURCE })).body.data;
    for (const n of [10, 11]) expect(await post(b1.endpoint_url, n)).toBe(200);
    expect(await until(emitted(b, b1.id), (ns) => ns.length === 2, "account B's events")).toEqual([10, 11]);
    const workers = childrenOf(pid);
    expect(workers).toHaveLength(2);
    expect(workers).toContain(first);

    // Both go on, each in its own worker; no third process.
    expect(await post(a1.endpoint_url, 5)).toBe(200);
    expect(await post(b1.endpoint_url, 12)).toBe(200);
    expect(await until(emitted(a, a1.id), (ns) => ns.length === 4, "account A's fourth event")).toEqual([1, 2, 3, 5]);
    expect(await until(emitted(b, b1.id), (ns) => ns.length === 3, "account B's third event")).toEqual([10, 11, 12]);
    expect(childrenOf(pid).sort()).toEqual(workers.sort());
  });
});
