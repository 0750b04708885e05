import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientSettings, configPath, readProfiles, writeProfile } from './cli-config';

describe('the pd config file (a real file in a temp XDG_CONFIG_HOME)', () => {
  let xdg: string;
  let env: NodeJS.ProcessEnv;
  beforeEach(() => {
    xdg = mkdtempSync(join(tmpdir(), 'pd-config-'));
    env = { XDG_CONFIG_HOME: xdg, SLUICE_DATA_DIR: join(xdg, 'no-data') };
  });
  afterEach(() => rmSync(xdg, { recursive: true, force: true }));

  it('writes profiles with mode 0600 and keeps the others', () => {
    const path = configPath(env);
    expect(path).toBe(join(xdg, 'sluice', 'config'));
    writeProfile('default', { api_key: 'sk_a', base_url: 'http://a:1' }, path);
    writeProfile('staging', { api_key: 'sk_b', base_url: 'http://b:2' }, path);
    writeProfile('default', { api_key: 'sk_c' }, path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readProfiles(path)).toEqual({ default: { api_key: 'sk_c', base_url: 'http://a:1' }, staging: { api_key: 'sk_b', base_url: 'http://b:2' } });
    expect(readFileSync(path, 'utf8')).toContain('[staging]\napi_key = sk_b');
  });

  it('reads keys written before any section as the default profile', () => {
    const path = configPath(env);
    require('node:fs').mkdirSync(join(xdg, 'sluice'));
    writeFileSync(path, 'api_key = sk_top\nbase_url = http://top:9/\n');
    expect(clientSettings(undefined, env)).toMatchObject({ url: 'http://top:9', key: 'sk_top', profile: 'default' });
  });

  it('lets SLUICE_URL and SLUICE_API_KEY win over the profile, and --profile pick one', () => {
    const path = configPath(env);
    writeProfile('default', { api_key: 'sk_a', base_url: 'http://a:1' }, path);
    writeProfile('staging', { api_key: 'sk_b', base_url: 'http://b:2' }, path);
    expect(clientSettings('staging', env)).toMatchObject({ url: 'http://b:2', key: 'sk_b', source: `${path} [staging]` });
    expect(clientSettings(undefined, { ...env, SLUICE_PROFILE: 'staging' })).toMatchObject({ key: 'sk_b' });
    expect(clientSettings(undefined, { ...env, SLUICE_URL: 'http://env:3', SLUICE_API_KEY: 'sk_env' })).toMatchObject({ url: 'http://env:3', key: 'sk_env', source: 'SLUICE_API_KEY' });
    expect(() => clientSettings('nope', env)).toThrow('no profile "nope"');
  });

  it('falls back to the api-key file of a server next to it, then asks for a login', () => {
    expect(() => clientSettings(undefined, env)).toThrow('no API key: run pd login');
    const dataDir = join(xdg, 'data');
    require('node:fs').mkdirSync(dataDir);
    writeFileSync(join(dataDir, 'api-key'), 'sk_file\n');
    expect(clientSettings(undefined, { ...env, SLUICE_DATA_DIR: dataDir, PORT: '9999' })).toMatchObject({ key: 'sk_file', url: 'http://127.0.0.1:9999' });
  });
});
