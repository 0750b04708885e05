import { readFileSync } from 'node:fs';
import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

/** Answers with what its own global scope holds of the server's `--expose-gc`. */
const PROBE = `
export default {
  name: "Global probe",
  version: "0.1.0",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run() {
    this.http.respond({ status: 200, body: { gc: typeof globalThis.gc } });
  },
};`;

/**
 * The server runs with `--expose-gc` (its idle collector calls `gc`), and that reaches no
 * component: component code runs in isolates of the sandbox workers, which start with flags of
 * their own.
 */
describe('the server\'s node flags', () => {
  let server: SluiceProcess | undefined;

  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  it('the server has gc exposed, component code does not', async () => {
    server = await startSluice();
    const args = readFileSync(`/proc/${server.proc.pid}/cmdline`, 'utf8').split('\0');
    expect(args).toContain('--expose-gc');
    const c = api(server.url, server.apiKey);
    const src = (await c.post('/v1/sources', { component_code: PROBE })).body.data;
    const r = await fetch(src.endpoint_url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ gc: 'undefined' });
  }, 60_000);
});
