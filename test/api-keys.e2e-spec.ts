import { api, newDataDir, removeDataDir, runAdmin, SluiceProcess, startSluice } from './support/sluice-process';

describe('API keys are unique: an issued key is never moved to another account', () => {
  const dir = newDataDir();
  const aliceKey = 'sk_alice_key_0123456789abcdef';
  let alice: string;
  let server: SluiceProcess | undefined;

  beforeAll(async () => {
    alice = JSON.parse(await runAdmin(dir, ['create-account', '--name', 'alice', '--key', aliceKey])).account_id;
  });
  afterAll(async () => {
    await server?.stop();
    removeDataDir(dir);
  });

  it('create-account with the key of an existing account fails, and the key still authenticates its owner', async () => {
    const attempt = runAdmin(dir, ['create-account', '--name', 'mallory', '--key', aliceKey]);
    await expect(attempt).rejects.toMatchObject({ code: 1 });
    await expect(attempt).rejects.toThrow(/already issued/);
    // The server's bootstrap is given the same key: it must not issue it again either.
    server = await startSluice({ dataDir: dir, apiKey: aliceKey });
    const me = await api(server.url, aliceKey).get('/v1/users/me');
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ id: alice, name: 'alice' });
  });
});
