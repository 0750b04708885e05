import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import * as ini from 'ini';
import { CliError, EXIT } from './cli-error';

/** One profile of the config file. */
export interface Profile {
  api_key?: string;
  base_url?: string;
}

/** Where `pd` talks to and with which key, and where each came from (for `pd whoami`). */
export interface ClientSettings {
  url: string;
  key: string;
  profile: string;
  source: string;
}

/** `$XDG_CONFIG_HOME/sluice/config`, else `~/.config/sluice/config`. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'sluice', 'config');
}

/**
 * The config file's profiles: INI sections (`[default]`, `[staging]`), each with `api_key` and
 * `base_url`. Keys written before any section belong to `default`. A missing file is no profiles.
 */
export function readProfiles(path = configPath()): Record<string, Profile> {
  if (!existsSync(path)) return {};
  let parsed: Record<string, unknown>;
  try {
    parsed = ini.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new CliError(`cannot read ${path}: ${(e as Error).message}`);
  }
  const profiles: Record<string, Profile> = {};
  const top: Profile = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (v && typeof v === 'object') profiles[k] = v as Profile;
    else if (k === 'api_key' || k === 'base_url') top[k] = String(v);
  }
  if (top.api_key || top.base_url) profiles.default = { ...top, ...profiles.default };
  return profiles;
}

/**
 * Writes one profile into the config file, keeping the others; the file is created with mode
 * 0600 (and set to it when it existed) because it holds API keys.
 */
export function writeProfile(name: string, profile: Profile, path = configPath()): void {
  const profiles = readProfiles(path);
  profiles[name] = { ...profiles[name], ...profile };
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, ini.stringify(profiles, { whitespace: true }), { mode: 0o600 });
  chmodSync(path, 0o600);
}

/** The server's default address: what `npm start` listens on. */
export function defaultUrl(env: NodeJS.ProcessEnv = process.env): string {
  return `http://127.0.0.1:${env.PORT ?? 8080}`;
}

/**
 * The URL and key of one profile: `SLUICE_URL` / `SLUICE_API_KEY` win over the config file's
 * profile (`--profile`, else `SLUICE_PROFILE`, else `default`); without a key anywhere, the
 * `api-key` file a server next to us wrote in its data directory is used.
 */
export function clientSettings(profileName?: string, env: NodeJS.ProcessEnv = process.env): ClientSettings {
  const name = profileName ?? env.SLUICE_PROFILE ?? 'default';
  const path = configPath(env);
  const profiles = readProfiles(path);
  const profile = profiles[name];
  if (profileName && !profile) {
    const known = Object.keys(profiles);
    throw CliError.usage(`no profile "${profileName}" in ${path}${known.length ? ` (profiles: ${known.join(', ')})` : ''}; run pd login --profile ${profileName}`);
  }
  const url = (env.SLUICE_URL ?? profile?.base_url ?? defaultUrl(env)).replace(/\/+$/, '');
  if (env.SLUICE_API_KEY) return { url, key: env.SLUICE_API_KEY, profile: name, source: 'SLUICE_API_KEY' };
  if (profile?.api_key) return { url, key: profile.api_key, profile: name, source: `${path} [${name}]` };
  const keyFile = join(resolve(env.SLUICE_DATA_DIR ?? './data'), 'api-key');
  if (existsSync(keyFile)) return { url, key: readFileSync(keyFile, 'utf8').trim(), profile: name, source: keyFile };
  throw new CliError('no API key: run pd login (or set SLUICE_API_KEY)', EXIT.auth);
}
