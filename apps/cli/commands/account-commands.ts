import type { Command } from 'commander';
import { configPath, defaultUrl, readProfiles, writeProfile } from '../cli-config';
import { CliError } from '../cli-error';
import { details, printJson, printText } from '../output';
import { askHidden } from '../prompt';
import { SluiceApi } from '../sluice-api';
import type { Context, GlobalOptions } from './context';

/** `pd login`: checks the key against the server, then writes it and the URL into the profile. */
export async function login(cmd: Command, opts: { apiKey?: string; url?: string }): Promise<void> {
  const g = cmd.optsWithGlobals<GlobalOptions>();
  const profile = g.profile ?? process.env.SLUICE_PROFILE ?? 'default';
  const saved = readProfiles()[profile];
  const url = (opts.url ?? saved?.base_url ?? process.env.SLUICE_URL ?? defaultUrl()).replace(/\/+$/, '');
  let key = opts.apiKey;
  if (!key) {
    if (!process.stdin.isTTY) throw CliError.usage('pd login needs --api-key KEY when not run in a terminal');
    key = (await askHidden(`API key for ${url} (not shown): `)).trim();
    if (!key) throw CliError.usage('no API key given');
  }
  // The key is checked before it is written: a typo must not replace a working profile.
  const me = (await new SluiceApi(url, key).get('/v1/users/me')).data;
  writeProfile(profile, { api_key: key, base_url: url });
  if (g.json) return printJson({ profile, base_url: url, user: me, config: configPath() });
  printText(`logged in to ${url} as ${me.id}${me.name ? ` (${me.name})` : ''}; saved to profile "${profile}" in ${configPath()}`);
}

/** `pd whoami`: the account, the server, the profile and where the key came from. */
export async function whoami(ctx: Context): Promise<void> {
  const me = (await ctx.api.get('/v1/users/me')).data;
  if (ctx.json) return printJson({ ...me, base_url: ctx.settings.url, profile: ctx.settings.profile, key_from: ctx.settings.source });
  printText(details([['id', me.id], ['name', me.name], ['email', me.email], ['server', ctx.settings.url], ['profile', ctx.settings.profile], ['key from', ctx.settings.source]]));
}
