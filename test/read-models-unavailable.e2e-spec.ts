import { join } from 'node:path';
import Database from 'better-sqlite3';
import { api, removeDataDir, SluiceProcess, startSluice } from './support/sluice-process';

/** A REST call that gives up (failing the test) instead of hanging if the server never answers. */
async function call(server: SluiceProcess, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(new URL(path, server.url), {
    method,
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  return { status: res.status, body: await res.json() };
}

/**
 * A real projection failure with a real cause: a trigger in the server's SQLite file makes every
 * insert into the webhooks read model fail. Writes must answer 503 naming the processor's error
 * (not hang), keep answering 503 while the cause is there, and work again once it is gone, with
 * the write that hit the failure in the read model.
 */
describe('writes answer 503 while the read models are failed, and work again after recovery', () => {
  let server: SluiceProcess;
  let db: Database.Database;

  beforeAll(async () => {
    // Normal locking: this test injects a failure through its own connection to the live file.
    server = await startSluice({ env: { SLUICE_SQLITE_LOCKING: 'normal' } });
    db = new Database(join(server.dataDir, 'sluice.db'));
    db.pragma('busy_timeout = 10000');
  });
  afterAll(async () => {
    db?.close();
    await server?.stop();
    removeDataDir(server.dataDir);
  });

  it('answers 503 read_models_unavailable, then recovers once the cause is dropped', async () => {
    const before = await call(server, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/before', name: 'before' });
    expect(before.status).toBe(200);
    const webhookId = before.body.data.id as string;

    db.exec("CREATE TRIGGER t BEFORE INSERT ON rm_webhooks BEGIN SELECT RAISE(ABORT, 'boom'); END");
    const failed = await call(server, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/during', name: 'during' });
    expect(failed.status).toBe(503);
    expect(failed.body.code).toBe('read_models_unavailable');
    expect(failed.body.error).toMatch(/boom/);

    // Other writes, of this slice and others, keep answering 503 while the cause is there.
    const again = await call(server, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/again', name: 'again' });
    expect(again.status).toBe(503);
    expect(again.body.code).toBe('read_models_unavailable');
    const update = await call(server, 'PUT', `/v1/webhooks/${webhookId}`, { name: 'renamed' });
    expect(update.status).toBe(503);
    const component = await call(server, 'POST', '/v1/components', { component_code: 'export default { name: "x", version: "0.0.1", async run() {} }' });
    expect(component.status).toBe(503);
    // Reads still answer from what the read models hold.
    expect((await call(server, 'GET', `/v1/webhooks/${webhookId}`)).body.data.name).toBe('before');

    db.exec('DROP TRIGGER t');
    let after = { status: 0, body: undefined as any };
    for (let i = 0; i < 200 && after.status !== 200; i++) {
      after = await call(server, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/after', name: 'after' });
      if (after.status !== 200) {
        expect(after.status).toBe(503);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    expect(after.status).toBe(200);
    const names = (await api(server.url, server.apiKey).get('/v1/users/me/webhooks')).body.data.map((w: { name: string }) => w.name);
    // The write that hit the failure was in the log all along and is projected now; the refused ones never were.
    expect(names.sort()).toEqual(['after', 'before', 'during']);
    expect((await call(server, 'PUT', `/v1/webhooks/${webhookId}`, { name: 'renamed' })).status).toBe(200);
  });
});
