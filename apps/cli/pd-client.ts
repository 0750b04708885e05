import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

/** Where the client talks to: `SLUICE_URL` and `SLUICE_API_KEY` (else `<SLUICE_DATA_DIR or ./data>/api-key`). */
export function clientSettings(env: NodeJS.ProcessEnv = process.env): { url: string; key: string } {
  const url = (env.SLUICE_URL ?? `http://127.0.0.1:${env.PORT ?? 8080}`).replace(/\/+$/, '');
  let key = env.SLUICE_API_KEY;
  const keyFile = join(resolve(env.SLUICE_DATA_DIR ?? './data'), 'api-key');
  if (!key && existsSync(keyFile)) key = readFileSync(keyFile, 'utf8').trim();
  if (!key) throw new Error(`no API key: set SLUICE_API_KEY (or run next to the server's ${keyFile})`);
  return { url, key };
}

/**
 * Bundles a component file with its relative imports (shared `common` objects, app files) into
 * one module. Package imports stay imports: the server installs and bundles them at save.
 */
export async function bundleLocalComponent(file: string): Promise<string> {
  const result = await build({
    entryPoints: [file],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    logLevel: 'silent',
    plugins: [{
      name: 'packages-stay-imports',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => (args.kind === 'entry-point' ? undefined : { path: args.path, external: true }));
      },
    }],
  });
  return result.outputFiles[0].text;
}

async function call(method: string, path: string, body?: unknown): Promise<any> {
  const { url, key } = clientSettings();
  const r = await fetch(`${url}${path}`, {
    method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await r.json().catch(() => ({}))) as { error?: string; details?: unknown };
  if (!r.ok) throw new Error(`${r.status} ${json.error ?? ''}${json.details ? ` ${JSON.stringify(json.details)}` : ''}`);
  return json;
}

/** `pd deploy <file | url | key>`: deploys a source; prints the deployed source as JSON. */
export async function deploy(target: string, name?: string): Promise<unknown> {
  const params: Record<string, unknown> = name ? { name } : {};
  if (/^https?:\/\//.test(target)) params.component_url = target;
  else if (existsSync(target)) params.component_code = await bundleLocalComponent(target);
  else params.key = target;
  return (await call('POST', '/v1/sources', params)).data;
}

/** `pd sources`: id, name and endpoint of each deployed source. */
export async function sources(): Promise<unknown[]> {
  return (await call('GET', '/v1/users/me/sources?limit=100')).data.map((s: Record<string, unknown>) => ({
    id: s.id, name: s.name, name_slug: s.name_slug, active: s.active, endpoint_url: s.endpoint_url ?? null,
  }));
}

/** `pd events <source> [-n N]`: the last N emitted events, newest first. */
export async function events(source: string, n = 10): Promise<unknown[]> {
  return (await call('GET', `/v1/sources/${encodeURIComponent(source)}/event_summaries?expand=event&limit=${n}`)).data;
}

/** `pd logs <source>`: the recent runs and hooks with their logs. */
export async function logs(source: string): Promise<unknown[]> {
  return (await call('GET', `/v1/sources/${encodeURIComponent(source)}/logs`)).data;
}
