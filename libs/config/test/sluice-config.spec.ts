import { ConfigError, loadConfig } from '../src/sluice-config';

describe('loadConfig', () => {
  it('gives the defaults of API.md', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 8080, host: '127.0.0.1', publicUrl: 'http://127.0.0.1:8080', publicUrlExplicit: false, egressAllow: [], componentEgressAllow: [],
      retrySchedule: [0, 5, 300, 1800, 7200, 18000, 36000, 36000], deliveryTimeoutMs: 15000, sqliteSync: 'full',
      sqliteLocking: 'normal', sqliteCheckpoint: 'background', sourceSnapshotEvery: 10_000,
    });
    expect(loadConfig({ SLUICE_SOURCE_SNAPSHOT_EVERY: '50' }).sourceSnapshotEvery).toBe(50);
    expect(loadConfig({}).fsyncPlacement).toBe('auto');
    expect(loadConfig({}).endpointServer).toBe('lean');
    expect(loadConfig({ SLUICE_ENDPOINT_SERVER: 'Node' }).endpointServer).toBe('node');
    expect(loadConfig({ SLUICE_FSYNC_PLACEMENT: 'Pool' }).fsyncPlacement).toBe('pool');
    expect(() => loadConfig({ SLUICE_FSYNC_PLACEMENT: 'disk' })).toThrow(/SLUICE_FSYNC_PLACEMENT.*auto, loop or pool/);
    expect(loadConfig({}).lingerWhenSaturated).toBe(false);
    expect(loadConfig({ SLUICE_LINGER_WHEN_SATURATED: 'On' }).lingerWhenSaturated).toBe(true);
    expect(loadConfig({ SLUICE_LINGER_WHEN_SATURATED: 'off' }).lingerWhenSaturated).toBe(false);
    expect(() => loadConfig({ SLUICE_LINGER_WHEN_SATURATED: 'yes' })).toThrow(/SLUICE_LINGER_WHEN_SATURATED: expected on or off, got "yes"/);
    expect(() => loadConfig({ SLUICE_SOURCE_SNAPSHOT_EVERY: '0' })).toThrow(/SLUICE_SOURCE_SNAPSHOT_EVERY/);
    expect(loadConfig({}).sqliteWalBuffer).toBe(true);
    expect(loadConfig({ SLUICE_SQLITE_WAL_BUFFER: 'off' }).sqliteWalBuffer).toBe(false);
    expect(() => loadConfig({ SLUICE_SQLITE_WAL_BUFFER: '0' })).toThrow(/SLUICE_SQLITE_WAL_BUFFER: expected on or off, got "0"/);
    expect(loadConfig({}).sqliteWalSync).toBe('light');
    expect(loadConfig({ SLUICE_SQLITE_WAL_SYNC: 'FDATASYNC' }).sqliteWalSync).toBe('fdatasync');
    expect(loadConfig({ SLUICE_SQLITE_WAL_SYNC: 'Ring' }).sqliteWalSync).toBe('ring');
    // stop 69's name for `ring`, when it was the default: refused, not taken for something else.
    expect(() => loadConfig({ SLUICE_SQLITE_WAL_SYNC: 'auto' })).toThrow(/SLUICE_SQLITE_WAL_SYNC: expected light, ring or fdatasync, got "auto"/);
    expect(() => loadConfig({ SLUICE_SQLITE_WAL_SYNC: 'fsync' })).toThrow(/SLUICE_SQLITE_WAL_SYNC: expected light, ring or fdatasync, got "fsync"/);
    expect(loadConfig({}).sqlitePageSize).toBe(4096);
    expect(loadConfig({ SLUICE_SQLITE_PAGE_SIZE: '1024' }).sqlitePageSize).toBe(1024);
    expect(loadConfig({ SLUICE_SQLITE_PAGE_SIZE: '65536' }).sqlitePageSize).toBe(65536);
    for (const bad of ['1000', '256', '131072', 'big', '1024.0x']) {
      expect(() => loadConfig({ SLUICE_SQLITE_PAGE_SIZE: bad })).toThrow(`SLUICE_SQLITE_PAGE_SIZE: expected a power of two from 512 to 65536, got "${bad}"`);
    }
    expect(loadConfig({}).sandboxSyncEntry).toBe(true);
    expect(loadConfig({ SLUICE_SANDBOX_SYNC_ENTRY: 'off' }).sandboxSyncEntry).toBe(false);
    expect(() => loadConfig({ SLUICE_SANDBOX_SYNC_ENTRY: 'yes' })).toThrow(/SLUICE_SANDBOX_SYNC_ENTRY: expected on or off, got "yes"/);
    expect(c).toMatchObject({ httpHeadersTimeoutMs: 10_000, httpBodyTimeoutMs: 30_000, httpKeepAliveTimeoutMs: 5_000, httpMaxConnections: 10_000 });
    expect(c.dataDir.endsWith('/data')).toBe(true);
  });

  it('caps what one run may produce: defaults, and each cap from its variable', () => {
    expect(loadConfig({}).runOutput).toMatchObject({
      maxEmits: 1000, maxEmitBytes: 1024 * 1024, maxRunEmitBytes: 16 * 1024 * 1024,
      maxDbWriteBytesPerRun: 1024 * 1024, maxDbBytesPerSource: 8 * 1024 * 1024, maxDbKeyChars: 256,
    });
    expect(loadConfig({
      SLUICE_MAX_EMITS_PER_RUN: '50', SLUICE_MAX_EMIT_BYTES: '1000', SLUICE_MAX_RUN_EMIT_BYTES: '5000',
      SLUICE_MAX_DB_WRITE_BYTES_PER_RUN: '2000', SLUICE_MAX_DB_BYTES_PER_SOURCE: '9000',
    }).runOutput).toMatchObject({ maxEmits: 50, maxEmitBytes: 1000, maxRunEmitBytes: 5000, maxDbWriteBytesPerRun: 2000, maxDbBytesPerSource: 9000 });
  });

  it('honours every variable', () => {
    const c = loadConfig({
      PORT: '9000', HOST: '0.0.0.0', SLUICE_DATA_DIR: '/tmp/x', SLUICE_API_KEY: 'sk_k', SLUICE_PUBLIC_URL: 'https://hooks.example.com/',
      SLUICE_EGRESS_ALLOW: '127.0.0.1, 10.0.0.0/8,localhost', SLUICE_RETRY_SCHEDULE: '0,1.5,10', SLUICE_DELIVERY_TIMEOUT_MS: '500',
      SLUICE_COMPONENT_EGRESS_ALLOW: '::1/128',
      SLUICE_HTTP_HEADERS_TIMEOUT_MS: '2000', SLUICE_HTTP_BODY_TIMEOUT_MS: '4000', SLUICE_HTTP_KEEPALIVE_TIMEOUT_MS: '1000', SLUICE_HTTP_MAX_CONNECTIONS: '50',
    });
    expect(c).toMatchObject({
      port: 9000, host: '0.0.0.0', dataDir: '/tmp/x', apiKey: 'sk_k', publicUrl: 'https://hooks.example.com', publicUrlExplicit: true,
      egressAllow: ['127.0.0.1', '10.0.0.0/8', 'localhost'], retrySchedule: [0, 1.5, 10], deliveryTimeoutMs: 500,
      componentEgressAllow: ['::1/128'],
      httpHeadersTimeoutMs: 2000, httpBodyTimeoutMs: 4000, httpKeepAliveTimeoutMs: 1000, httpMaxConnections: 50,
    });
  });

  it('takes background checkpoints with normal locking, inline ones with exclusive locking, and refuses background ones with it', () => {
    expect(loadConfig({ SLUICE_SQLITE_LOCKING: 'normal', SLUICE_SQLITE_CHECKPOINT: 'background' })).toMatchObject({ sqliteLocking: 'normal', sqliteCheckpoint: 'background' });
    expect(loadConfig({ SLUICE_SQLITE_LOCKING: 'normal', SLUICE_SQLITE_CHECKPOINT: 'Inline' })).toMatchObject({ sqliteLocking: 'normal', sqliteCheckpoint: 'inline' });
    // Exclusive locking alone brings inline checkpoints (no other connection reaches the WAL index).
    expect(loadConfig({ SLUICE_SQLITE_LOCKING: 'exclusive' })).toMatchObject({ sqliteLocking: 'exclusive', sqliteCheckpoint: 'inline' });
    expect(() => loadConfig({ SLUICE_SQLITE_LOCKING: 'exclusive', SLUICE_SQLITE_CHECKPOINT: 'background' }))
      .toThrow(/^SLUICE_SQLITE_CHECKPOINT: background needs SLUICE_SQLITE_LOCKING=normal/);
  });

  it.each([
    ['PORT', 'eighty'],
    ['SLUICE_PUBLIC_URL', 'ftp://x'],
    ['SLUICE_EGRESS_ALLOW', '10.0.0.0/99'],
    ['SLUICE_COMPONENT_EGRESS_ALLOW', '127.0.0.1:80'],
    ['SLUICE_RETRY_SCHEDULE', '0,-5'],
    ['SLUICE_DELIVERY_TIMEOUT_MS', '0'],
    ['SLUICE_SQLITE_SYNC', 'sometimes'],
    ['SLUICE_SQLITE_LOCKING', 'shared'],
    ['SLUICE_ENDPOINT_SERVER', 'fastify'],
    ['SLUICE_LEAN_DIGEST', 'yes'],
    ['SLUICE_SQLITE_CHECKPOINT', 'later'],
    ['SLUICE_MAX_EMITS_PER_RUN', '0'],
    ['SLUICE_MAX_EMIT_BYTES', '1.5'],
    ['SLUICE_MAX_RUN_EMIT_BYTES', 'lots'],
    ['SLUICE_MAX_DB_WRITE_BYTES_PER_RUN', '-1'],
    ['SLUICE_MAX_DB_BYTES_PER_SOURCE', '99999999999999'],
    ['SLUICE_HTTP_HEADERS_TIMEOUT_MS', '0'],
    ['SLUICE_HTTP_HEADERS_TIMEOUT_MS', '60000'],
    ['SLUICE_HTTP_BODY_TIMEOUT_MS', 'soon'],
    ['SLUICE_HTTP_KEEPALIVE_TIMEOUT_MS', '-1'],
    ['SLUICE_HTTP_MAX_CONNECTIONS', '0'],
    ['SLUICE_SEND_TIMEOUT_MS', '0'],
    ['SLUICE_SMTP_URL', 'http://mail.example.com'],
    ['SLUICE_S3_ENDPOINT', 'ftp://s3.example.com'],
  ])('a bad %s is a ConfigError naming it', (variable, value) => {
    let err: unknown;
    try {
      loadConfig({ [variable]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe(variable);
    expect((err as Error).message.startsWith(`${variable}: `)).toBe(true);
  });

  describe('sends (SMTP, S3)', () => {
    const smtp = { SLUICE_SMTP_URL: 'smtps://mailer:p%40ss@mail.example.com:465', SLUICE_SMTP_FROM: 'Sluice <sluice@example.com>' };
    const s3 = { SLUICE_S3_ENDPOINT: 'http://127.0.0.1:9000/', SLUICE_S3_ACCESS_KEY_ID: 'AKID', SLUICE_S3_SECRET_ACCESS_KEY: 'secret' };

    function configError(env: NodeJS.ProcessEnv): ConfigError {
      try {
        loadConfig(env);
      } catch (e) {
        if (e instanceof ConfigError) return e;
        throw e;
      }
      throw new Error('expected a ConfigError');
    }

    it('has no SMTP and no S3 by default (sends go to the outbox) and a 15 s send timeout', () => {
      expect(loadConfig({}).sends).toEqual({ smtp: undefined, s3: undefined, timeoutMs: 15_000 });
    });

    it('reads SMTP and S3 from their variables', () => {
      const c = loadConfig({ ...smtp, ...s3, SLUICE_SMTP_TO: 'ops@example.com, dev@example.com', SLUICE_S3_REGION: 'eu-west-3', SLUICE_SEND_TIMEOUT_MS: '2000' });
      expect(c.sends).toEqual({
        smtp: { url: smtp.SLUICE_SMTP_URL, from: 'Sluice <sluice@example.com>', to: 'ops@example.com, dev@example.com' },
        s3: { endpoint: 'http://127.0.0.1:9000', accessKeyId: 'AKID', secretAccessKey: 'secret', region: 'eu-west-3' },
        timeoutMs: 2000,
      });
      expect(loadConfig(s3).sends.s3?.region).toBe('us-east-1');
    });

    it('names the variable that is missing or wrong, and never echoes the SMTP password', () => {
      const badUrl = configError({ SLUICE_SMTP_URL: 'mail.example.com:25?pass=hunter2', SLUICE_SMTP_FROM: 'a@b.c' });
      expect(badUrl.variable).toBe('SLUICE_SMTP_URL');
      expect(badUrl.message).not.toContain('hunter2');
      expect(configError({ SLUICE_SMTP_URL: smtp.SLUICE_SMTP_URL }).variable).toBe('SLUICE_SMTP_FROM');
      expect(configError({ ...smtp, SLUICE_SMTP_FROM: 'nobody' }).variable).toBe('SLUICE_SMTP_FROM');
      expect(configError({ ...smtp, SLUICE_SMTP_TO: 'ops@example.com, oops' }).variable).toBe('SLUICE_SMTP_TO');
      expect(configError({ SLUICE_S3_ENDPOINT: s3.SLUICE_S3_ENDPOINT, SLUICE_S3_SECRET_ACCESS_KEY: 'x' }).variable).toBe('SLUICE_S3_ACCESS_KEY_ID');
      expect(configError({ SLUICE_S3_ENDPOINT: s3.SLUICE_S3_ENDPOINT, SLUICE_S3_ACCESS_KEY_ID: 'x' }).variable).toBe('SLUICE_S3_SECRET_ACCESS_KEY');
      expect(configError({ SLUICE_S3_ACCESS_KEY_ID: 'x' }).message).toMatch(/^SLUICE_S3_ACCESS_KEY_ID: set, but SLUICE_S3_ENDPOINT is not/);
      expect(configError({ ...s3, SLUICE_S3_ENDPOINT: 'http://key:secret@s3.example.com' }).variable).toBe('SLUICE_S3_ENDPOINT');
      expect(configError({ ...s3, SLUICE_S3_REGION: 'EU West' }).variable).toBe('SLUICE_S3_REGION');
    });
  });

  describe('OAuth clients of catalog apps', () => {
    it('reads each SLUICE_OAUTH_<SLUG>_CLIENT_ID / _CLIENT_SECRET pair by slug, and a 30 s refresh sweep by default', () => {
      const c = loadConfig({ SLUICE_OAUTH_GITHUB_CLIENT_ID: 'gh-id', SLUICE_OAUTH_GITHUB_CLIENT_SECRET: 'gh-secret', SLUICE_OAUTH_REFRESH_SWEEP_MS: '500' });
      expect(c.oauthClients).toEqual({ github: { clientId: 'gh-id', clientSecret: 'gh-secret' } });
      expect(c.oauthRefreshSweepMs).toBe(500);
      expect(loadConfig({}).oauthClients).toEqual({});
      expect(loadConfig({}).oauthRefreshSweepMs).toBe(30_000);
    });

    it('names the half of a pair that is missing, never echoing the secret', () => {
      let err: unknown;
      try {
        loadConfig({ SLUICE_OAUTH_SLACK_CLIENT_SECRET: 'very-secret' });
      } catch (e) {
        err = e;
      }
      expect((err as { variable: string }).variable).toBe('SLUICE_OAUTH_SLACK_CLIENT_ID');
      expect((err as Error).message).not.toContain('very-secret');
    });
  });
});
