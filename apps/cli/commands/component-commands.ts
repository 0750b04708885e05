import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CliError, EXIT, ServerError } from '../cli-error';
import { resolveNamed } from '../names';
import { printJson, printText, table, time } from '../output';
import { bundleComponentFile, looksLikeFile, resolveComponent, type SavedComponent } from '../pd-client';
import { withProgress } from '../progress';
import { commandLineProps } from '../props';
import { actionTemplate, appTemplate, slugify, sourceTemplate } from '../templates';
import type { Context } from './context';
import { warn } from './source-commands';

/** `pd publish <file>`: prints `key@version`. */
export async function publish(ctx: Context, file: string): Promise<void> {
  if (!existsSync(file)) throw CliError.usage(`no such file: ${file}`);
  const code = (await bundleComponentFile(file)).code;
  const saved = (await withProgress(`publishing ${file}`, ctx.api.post('/v1/components', { component_code: code, publish: true }))).data;
  warn(saved);
  if (ctx.json) return printJson(saved);
  // Plain key@version, so that `pd run $(pd publish action.mjs)` works.
  printText(`${saved.key}@${saved.version}`);
}

/** `pd unpublish <key[@version]>`: `DELETE /v1/components/registry/{key}` (a server older than that says it cannot). */
export async function unpublish(ctx: Context, target: string): Promise<void> {
  const at = target.lastIndexOf('@');
  const key = at > 0 ? target.slice(0, at) : target;
  const version = at > 0 ? target.slice(at + 1) : undefined;
  let answer: Record<string, any>;
  try {
    answer = await ctx.api.del(`/v1/components/registry/${encodeURIComponent(key)}`, { version });
  } catch (e) {
    // The router's own 404 ("Cannot DELETE ..."), not the registry's: the server predates unpublishing.
    if (e instanceof ServerError && e.status === 404 && /^Cannot DELETE/.test(e.message)) {
      throw new CliError(`the server at ${ctx.api.baseUrl} cannot unpublish (no DELETE /v1/components/registry/{key})`);
    }
    throw e;
  }
  if (ctx.json) printJson(answer.data ?? answer);
  else printText(`unpublished ${target}`);
}

/** `pd run <action key | file>`: prints the run's answer as JSON; resolves with the exit code (1: the run failed). */
export async function runAction(ctx: Context, target: string, opts: { prop: string[]; props?: string }): Promise<number> {
  let body: Record<string, unknown>;
  if (looksLikeFile(target)) {
    const saved: SavedComponent = (await withProgress(`saving ${target}`, ctx.api.post('/v1/components', { component_code: (await bundleComponentFile(target)).code }))).data;
    body = { component_id: saved.id, configured_props: commandLineProps(saved.configurable_props, opts.prop, opts.props) };
  } else {
    const listed = await resolveComponent(ctx.api, target);
    body = { key: target, configured_props: commandLineProps(listed?.configurable_props, opts.prop, opts.props) };
  }
  const answer = (await ctx.api.post('/v1/actions/run', body)).data;
  // The answer is printed either way (JSON: ret and exports are data); a failed run is a failed command.
  printJson(answer);
  return answer.ok === false ? EXIT.failed : EXIT.ok;
}

/** `pd runs <workflow> [-n N]`. */
export async function runs(ctx: Context, ref: string, opts: { n: number }): Promise<void> {
  const w = await resolveNamed(ctx.api, 'workflow', ref);
  const items: Record<string, any>[] = (await ctx.api.get(`/v1/workflows/${w.id}/runs`, { limit: opts.n })).data;
  const compact = items.map((r) => ({
    id: r.id, status: r.status, exit_reason: r.exit_reason ?? null, started_at_ms: r.started_at_ms, finished_at_ms: r.finished_at_ms ?? null,
    steps: (r.steps ?? []).map((s: Record<string, any>) => ({
      name: s.name, status: s.status, duration_ms: s.duration_ms ?? null, ...(s.error ? { error: `${s.error.name}: ${s.error.message}` } : {}),
    })),
  }));
  if (ctx.json) return printJson(compact);
  printText(table(compact, [
    { header: 'id', value: (r) => r.id },
    { header: 'started', value: (r) => time(r.started_at_ms) },
    { header: 'status', value: (r) => (r.exit_reason ? `${r.status} (${r.exit_reason})` : r.status) },
    { header: 'steps', value: (r) => r.steps.map((s: Record<string, any>) => `${s.name}:${s.status}${s.error ? ` ${s.error}` : ''}`).join(' ') },
  ], `no runs yet for ${w.id}`));
}

/** `pd init source | action | app <name>`: writes the template, prints its path. */
export function init(kind: string, name: string, opts: { http?: boolean; timer?: boolean; db?: boolean; dir: string; force?: boolean; json?: boolean }): void {
  const file = join(opts.dir, `${slugify(name)}${kind === 'app' ? '.app' : ''}.mjs`);
  if (existsSync(file) && !opts.force) throw new CliError(`${file} exists; --force overwrites it`);
  if (kind !== 'source' && (opts.http || opts.timer || opts.db)) throw CliError.usage('--http, --timer and --db are for pd init source');
  const text = kind === 'source' ? sourceTemplate(name, opts) : kind === 'action' ? actionTemplate(name) : appTemplate(name);
  writeFileSync(file, text, { flag: 'w' });
  if (opts.json) return printJson({ file, kind });
  printText(file);
  const next = kind === 'source' ? `pd deploy ${file}  (or pd dev ${file})` : kind === 'action' ? `pd run ${file}  (or pd publish ${file})` : `import it from a component: import ${slugify(name).replace(/-/g, '_')} from "./${slugify(name)}.app.mjs"`;
  process.stderr.write(`next: ${next}\n`);
}
