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

/** `pd publish <file>`: saves the component (bundled with its relative imports) into the account's registry; returns `key@version`. */
export async function publish(file: string): Promise<{ published: string; id: string; warnings: unknown[] }> {
  if (!existsSync(file)) throw new Error(`no such file: ${file}`);
  const saved = (await call('POST', '/v1/components', { component_code: await bundleLocalComponent(file), publish: true })).data;
  return { published: `${saved.key}@${saved.version}`, id: saved.id, warnings: saved.warnings ?? [] };
}

/**
 * One `--prop k=v` value. A prop typed `string` takes the text as it is; any other prop (or an
 * unknown one) takes it as JSON when it parses (`5`, `true`, `[1,2]`, `{"a":1}`), else as text.
 */
export function propValue(text: string, type: string | undefined): unknown {
  if (type === 'string') return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** `--prop k=v` arguments as configured props, typed by the component's props when known. */
export function parseProps(pairs: string[], types: Record<string, string> = {}): Record<string, unknown> {
  const props: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--prop takes name=value, got "${pair}"`);
    const name = pair.slice(0, eq);
    props[name] = propValue(pair.slice(eq + 1), types[name]);
  }
  return props;
}

function propTypes(component: { configurable_props?: { name: string; type: string }[] } | undefined): Record<string, string> {
  return Object.fromEntries((component?.configurable_props ?? []).map((p) => [p.name, p.type]));
}

/**
 * `pd run <action key | key@version | file> --prop k=v ...`: runs an action once and returns the
 * answer of `POST /v1/actions/run` (`ret`, `exports`, `summary`, `os`, ...). A file is bundled
 * with its relative imports and saved first, so its props' types are known for `--prop`.
 */
export async function runAction(target: string, propPairs: string[]): Promise<Record<string, unknown>> {
  if (existsSync(target)) {
    const saved = (await call('POST', '/v1/components', { component_code: await bundleLocalComponent(target) })).data;
    return (await call('POST', '/v1/actions/run', { component_id: saved.id, configured_props: parseProps(propPairs, propTypes(saved)) })).data;
  }
  const at = target.lastIndexOf('@');
  const key = at > 0 ? target.slice(0, at) : target;
  // Only to type the props: a key the registry does not list is still sent, for the server to answer.
  const listed = await call('GET', `/v1/components/registry/${encodeURIComponent(key)}`).catch(() => undefined);
  return (await call('POST', '/v1/actions/run', { key: target, configured_props: parseProps(propPairs, propTypes(listed?.data)) })).data;
}
