import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@app/config';
import { asSluiceEvent, Streams } from '@app/domain';
import { FakeOAuthProvider } from '../../../test/support/fake-oauth-provider';
import { EngineRuntime } from './engine-runtime';
import { ConflictError } from './engine-errors';
import { AppUseCases, MAX_CONNECTED_ACCOUNTS_PER_ACCOUNT } from './use-cases/app-use-cases';
import { eventually } from '../../../test/support/sluice-process';

/**
 * Token renewal on the real runtime (SQLite log and read models) against a fake provider on
 * 127.0.0.1 (a real HTTP server checking the client and the refresh tokens it receives).
 */
describe('ConnectedAccountAuth', () => {
  const provider = new FakeOAuthProvider();
  let dir: string;
  let rt: EngineRuntime;
  let apps: AppUseCases;

  beforeAll(async () => {
    await provider.start();
  });
  afterAll(async () => {
    await provider.stop();
  });
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-auth-'));
    rt = new EngineRuntime(loadConfig({ SLUICE_DATA_DIR: dir, SLUICE_EGRESS_ALLOW: '127.0.0.1', SLUICE_SQLITE_SYNC: 'normal' }), { sandbox: false });
    rt.projections.start();
    await rt.projections.caughtUp();
    apps = new AppUseCases(rt);
    await apps.register('u_1', {
      name_slug: 'forge', name: 'Forge', auth_type: 'oauth',
      oauth: { authorize_url: `${provider.url}/authorize`, token_url: `${provider.url}/token`, client_id: provider.clientId, client_secret: provider.clientSecret },
    });
  });
  afterEach(async () => {
    await rt.auth.stop();
    await rt.projections.stop();
    await rt.store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** An OAuth account connected through the provider's real authorization-code grant. */
  async function connected(): Promise<string> {
    const authorize = new URL(apps.oauthStart('u_1', 'forge', 'work'));
    const back = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location')!);
    const { id } = await apps.oauthCallback({ code: back.searchParams.get('code')!, state: back.searchParams.get('state')! });
    return id;
  }
  const types = async (id: string) => (await rt.store.readStream(Streams.connectedAccount(id))).map((e) => asSluiceEvent(e)!.type);

  it('the background refresher keeps a timer only while a renewal is due: none without accounts, then at the token\'s refresh time, where it renews it', async () => {
    // Live, as the server runs it: commits that change a connected account reschedule it.
    rt.goLive();
    rt.auth.start();
    try {
      expect(rt.auth.scheduled).toBe(false);
      // A 2 s token is renewed 1.5 s after it was granted, long before the 30 s retry interval.
      provider.expiresIn = 2;
      const id = await connected();
      await rt.settle();
      expect(rt.auth.scheduled).toBe(true);
      const grantsBefore = provider.refreshGrants;
      await eventually(() => (provider.refreshesAccepted > 0 && provider.refreshGrants > grantsBefore ? true : undefined), 10_000, 'a renewal at the refresh time');
      await eventually(async () => ((await types(id)).includes('connected_account.tokens_refreshed.v1') ? true : undefined), 5_000, 'the renewal recorded');
      // The renewed token is due in its turn.
      await eventually(() => (rt.auth.scheduled ? true : undefined), 5_000, 'the next renewal scheduled');
      await apps.delete('u_1', id);
      await rt.settle();
      expect(rt.auth.scheduled).toBe(false);
    } finally {
      await rt.auth.stop();
    }
  });

  it('given concurrent renewals of one account, then the provider sees one refresh grant and every caller gets the new token', async () => {
    const id = await connected();
    const grantsBefore = provider.refreshGrants;
    const rows = await Promise.all([1, 2, 3, 4, 5].map(() => rt.auth.refresh(id)));
    expect(provider.refreshGrants - grantsBefore).toBe(1);
    const renewed = rt.auth.credentialsOf(rows[0]!);
    expect(provider.isLive(renewed.oauth_access_token)).toBe(true);
    for (const r of rows) expect(rt.auth.credentialsOf(r!)).toEqual(renewed);
    expect(await types(id)).toEqual(['connected_account.created.v1', 'connected_account.tokens_refreshed.v1']);
    const resolved = await rt.auth.resolve('u_1', { forge: { authProvisionId: id }, other: { authProvisionId: id } }, ['forge']);
    // Only the declared app prop is resolved; a look-alike value elsewhere stays as it was.
    expect(resolved).toEqual({ props: { forge: { $auth: renewed }, other: { authProvisionId: id } } });
  });

  it('when the provider refuses the refresh token, then the failure is recorded once and no further grant is tried', async () => {
    const id = await connected();
    provider.revokeRefreshTokens();
    const grantsBefore = provider.refreshGrants;
    const row = await rt.auth.refresh(id);
    expect(row).toMatchObject({ healthy: 0, last_error: 'the provider refused the grant: invalid_grant' });
    await rt.auth.refresh(id);
    expect(provider.refreshGrants - grantsBefore).toBe(1);
    expect(await types(id)).toEqual(['connected_account.created.v1', 'connected_account.refresh_failed.v1']);
  });

  it('when the token endpoint cannot be reached, then nothing is recorded and the account stays healthy for the next try', async () => {
    const id = await connected();
    await apps.register('u_1', {
      name_slug: 'down', name: 'Down', auth_type: 'oauth',
      // A closed port on loopback: connection refused.
      oauth: { authorize_url: 'http://127.0.0.1:9/authorize', token_url: 'http://127.0.0.1:9/token', client_id: 'c', client_secret: 's' },
    });
    const downId = await apps.connect('u_1', { app: 'down', name: 'down', credentials: { oauth_access_token: 'a', oauth_refresh_token: 'r' } });
    await expect(rt.auth.refresh(downId)).rejects.toThrow(/could not be reached/);
    expect(rt.queries.apps.connectedAccount(downId)).toMatchObject({ healthy: 1, refreshable: 1 });
    expect(await types(downId)).toEqual(['connected_account.created.v1']);
    expect(await types(id)).toEqual(['connected_account.created.v1']);
  });

  it('resolves nothing for another account\'s or a deleted account, and says which prop and account', async () => {
    const id = await connected();
    expect(await rt.auth.resolve('u_2', { forge: { authProvisionId: id } }, ['forge'])).toEqual({
      error: expect.stringContaining(`prop "forge": connected account ${id} not found`),
    });
    await apps.delete('u_1', id);
    expect(await rt.auth.resolve('u_1', { forge: { authProvisionId: id } }, ['forge'])).toEqual({
      error: expect.stringContaining(`connected account ${id} not found`),
    });
  });

  it('caps the connected accounts of one account; other accounts are not affected', async () => {
    const credentials = { api_key: 'k' };
    // All at once: the count check and the append of one creation never interleave with another's.
    const outcomes = await Promise.allSettled(Array.from({ length: MAX_CONNECTED_ACCOUNTS_PER_ACCOUNT + 5 }, (_, i) => apps.connect('u_1', { app: 'openweather_api', name: `w${i}`, credentials })));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(MAX_CONNECTED_ACCOUNTS_PER_ACCOUNT);
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(refused).toHaveLength(5);
    for (const r of refused) expect(r.reason).toBeInstanceOf(ConflictError);
    expect(rt.queries.apps.connectedAccountCount('u_1')).toBe(MAX_CONNECTED_ACCOUNTS_PER_ACCOUNT);
    await expect(apps.connect('u_2', { app: 'openweather_api', name: 'theirs', credentials })).resolves.toMatch(/^apn_/);
  });
});
