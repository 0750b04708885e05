import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

const PLAIN = `
export default {
  name: "Plain", version: "1.0.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) { this.$emit(event.body); },
};`;

const RESPONDER = `
export default {
  name: "Responder", version: "1.0.0",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) { this.http.respond({ status: 201, body: { answered: "by the new code" } }); },
};`;

/**
 * The endpoint lookup is remembered between requests (issue 10). Every change to the source
 * behind a key must show at the very next request: deactivated and deleted sources answer 404,
 * a reactivated one 200, and code that answers itself (customResponse) answers at once.
 */
describe('source endpoints follow every change of their source at once', () => {
  let server: SluiceProcess;
  let c: ReturnType<typeof api>;

  beforeAll(async () => {
    server = await startSluice({ env: { SLUICE_SANDBOX_WORKERS: '1' } });
    c = api(server.url, server.apiKey);
  });
  afterAll(async () => {
    await server?.stop();
    if (server) removeDataDir(server.dataDir);
  });

  const post = async (url: string) => {
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
    return { status: r.status, body: await r.text() };
  };

  it('deactivate, activate, new code with its own response, delete: each shows at the next request', async () => {
    const src = (await c.post('/v1/sources', { component_code: PLAIN })).body.data;
    expect((await post(src.endpoint_url)).status).toBe(200);
    expect((await post(src.endpoint_url)).status).toBe(200);

    expect((await c.put(`/v1/sources/${src.id}`, { active: false })).status).toBe(200);
    expect((await post(src.endpoint_url)).status).toBe(404);

    expect((await c.put(`/v1/sources/${src.id}`, { active: true })).status).toBe(200);
    expect((await post(src.endpoint_url)).status).toBe(200);

    expect((await c.put(`/v1/sources/${src.id}`, { component_code: RESPONDER })).status).toBe(200);
    const answered = await post(src.endpoint_url);
    expect(answered.status).toBe(201);
    expect(JSON.parse(answered.body)).toEqual({ answered: 'by the new code' });

    expect((await c.del(`/v1/sources/${src.id}`)).status).toBe(200);
    expect((await post(src.endpoint_url)).status).toBe(404);
  });
});
