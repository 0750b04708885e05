import { CliError } from '../cli-error';
import { eventLine, followEvents, followLogs, logLines, type EventSummary, type SourceLog } from '../follow';
import { resolveNamed, type NamedKind } from '../names';
import { details, printJson, printText, table, time, type Column } from '../output';
import { looksLikeFile, resolveComponent, type SavedComponent } from '../pd-client';
import { withProgress } from '../progress';
import { askForProps, commandLineProps, mergeForUpdate, unsetPropsError, unsetRequiredProps, type ConfigurableProp } from '../props';
import { interruptSignal, type Context } from './context';
import { resolveAny, triggerText } from './list-commands';

function printSource(ctx: Context, s: Record<string, any>, verb?: string, component: string = s.component_id): void {
  if (ctx.json) return printJson(s);
  if (verb) process.stderr.write(`${verb} ${s.id} (${s.name_slug})\n`);
  printText(details([
    ['id', s.id], ['name', s.name], ['slug', s.name_slug], ['active', s.active ? 'yes' : 'no'], ['status', s.status],
    ['endpoint', s.endpoint_url], ['component', component], ['props', s.configured_props],
    ['backlog', s.backlog ? sourceBacklogText(s.backlog) : undefined],
    ['created', time(s.created_at)], ['updated', time(s.updated_at)],
    ['last error', s.last_error ?? undefined],
  ]));
}

/** Prints a component's definition warnings on stderr. */
export function warn(c: SavedComponent | undefined): void {
  for (const w of c?.warnings ?? []) process.stderr.write(`warning: ${w.field} ${w.message}\n`);
}

/**
 * The configured props for a deploy: `--props` and `--prop` typed by the component's props;
 * required ones still unset are asked for on a terminal, else refused (exit 2).
 */
export async function propsForDeploy(ctx: Context, component: SavedComponent | undefined, opts: { prop: string[]; props?: string }): Promise<Record<string, unknown>> {
  const given = commandLineProps(component?.configurable_props, opts.prop, opts.props);
  if (!component) return given;
  const missing = unsetRequiredProps(component.configurable_props, given);
  if (missing.length === 0) return given;
  if (!process.stdin.isTTY) throw unsetPropsError(missing);
  return askForProps(ctx.api, component.id, missing, given);
}

/** A component target that is a registry key (`key` or `key@version`): neither a URL nor a file. */
export const isKeyTarget = (target: string) => !/^https?:\/\//.test(target) && !looksLikeFile(target);

/** `pd deploy <file | key[@version] | URL>`: saves the component, types or asks for its props, deploys it. */
export async function deploy(ctx: Context, target: string, opts: { name?: string; prop: string[]; props?: string; active?: boolean }): Promise<void> {
  const isKey = isKeyTarget(target);
  const component = await withProgress(`saving ${target} (the server installs its packages)`, resolveComponent(ctx.api, target));
  warn(component);
  const configured = await propsForDeploy(ctx, component, opts);
  const body: Record<string, unknown> = {
    // A key keeps its @version pin; a file or URL was saved above and is deployed by its id.
    ...(isKey ? { key: target } : { component_id: component!.id }),
    ...(opts.name ? { name: opts.name } : {}),
    ...(Object.keys(configured).length ? { configured_props: configured } : {}),
    ...(opts.active === false ? { active: false } : {}),
  };
  const source = (await withProgress(`deploying ${target}`, ctx.api.post('/v1/sources', body))).data;
  printSource(ctx, source, 'deployed');
}

/** `pd update <source>`: new code, name, activity or props; the source keeps its id. */
export async function update(ctx: Context, ref: string, opts: { code?: string; name?: string; activate?: boolean; deactivate?: boolean; prop: string[]; props?: string }): Promise<void> {
  if (opts.activate && opts.deactivate) throw CliError.usage('--activate and --deactivate cannot go together');
  if (!opts.code && !opts.name && !opts.activate && !opts.deactivate && opts.prop.length === 0 && !opts.props) {
    throw CliError.usage('pd update needs at least one of --code, --name, --activate, --deactivate, --prop, --props');
  }
  const source = await resolveNamed(ctx.api, 'source', ref);
  let component: SavedComponent | undefined;
  if (opts.code) {
    component = await withProgress(`saving ${opts.code}`, resolveComponent(ctx.api, opts.code));
    if (!component) throw new CliError(`no component with key "${opts.code}" (pd list components)`);
    warn(component);
  } else if (opts.prop.length || opts.props) {
    component = (await ctx.api.get(`/v1/components/${encodeURIComponent(String(source.component_id))}`)).data;
  }
  const changes = commandLineProps(component?.configurable_props, opts.prop, opts.props);
  // The API replaces configured props as a whole: unchanged ones are sent again.
  const configured = Object.keys(changes).length ? mergeForUpdate(component!.configurable_props, (source.configured_props ?? {}) as Record<string, unknown>, changes) : {};
  const body: Record<string, unknown> = {
    // As for deploy: a key keeps its @version pin; a file or URL was saved above.
    ...(opts.code ? (isKeyTarget(opts.code) ? { key: opts.code } : { component_id: component!.id }) : {}),
    ...(opts.name ? { name: opts.name } : {}),
    ...(Object.keys(configured).length ? { configured_props: configured } : {}),
    ...(opts.activate ? { active: true } : opts.deactivate ? { active: false } : {}),
  };
  const updated = (await withProgress(`updating ${source.id}`, ctx.api.put(`/v1/sources/${source.id}`, body))).data;
  printSource(ctx, updated, 'updated');
}

const DELETE_PATHS: Record<NamedKind, string> = { source: '/v1/sources/', workflow: '/v1/workflows/', webhook: '/v1/webhooks/' };

/** `pd delete <name>`: a source, workflow or webhook. */
export async function remove(ctx: Context, ref: string, opts: { type?: NamedKind; ignoreHookErrors?: boolean }): Promise<void> {
  const { kind, item } = opts.type ? { kind: opts.type, item: await resolveNamed(ctx.api, opts.type, ref) } : await resolveAny(ctx.api, ref, ['source', 'workflow', 'webhook']);
  await ctx.api.del(`${DELETE_PATHS[kind]}${item.id}`, kind === 'source' && opts.ignoreHookErrors ? { ignore_hook_errors: 'true' } : undefined);
  if (ctx.json) printJson({ id: item.id, kind, deleted: true });
  else printText(`deleted ${kind} ${item.id}${item.name ? ` (${item.name})` : ''}`);
}

/** A workflow's `backlog` in a line: its runs waiting (of how many it may hold) and the emits waiting for it. */
export function backlogText(b: { runs_waiting: number; emits_waiting: number; full: boolean; max_runs_waiting: number }): string {
  return `${b.runs_waiting} of ${b.max_runs_waiting} runs waiting${b.full ? ' (full: its triggers get 429 and its emits wait until half have run)' : ''}, ${b.emits_waiting} emits waiting`;
}

/** A source's `backlog` in a line: its endpoint's requests waiting to run and their bytes (of how many it may hold), and the emits waiting for it. */
export function sourceBacklogText(b: {
  runs_waiting: number; bytes_waiting: number; full: boolean; max_runs_waiting: number; max_bytes_waiting: number; emits_waiting: number;
}): string {
  const kb = (n: number) => `${Math.ceil(n / 1024).toLocaleString('en-US')} KB`;
  return `${b.runs_waiting} of ${b.max_runs_waiting} requests waiting (${kb(b.bytes_waiting)} of ${kb(b.max_bytes_waiting)})`
    + `${b.full ? ' (full: its endpoint answers 429 until one has run)' : ''}, ${b.emits_waiting} emits waiting`;
}

/** `pd describe <name>`: one source (with its component's props), workflow, webhook or component. */

export async function describe(ctx: Context, ref: string, opts: { type?: NamedKind | 'component' }): Promise<void> {
  if (opts.type === 'component' || (!opts.type && /^sc_/.test(ref))) {
    const c = (await ctx.api.get(`/v1/components/${encodeURIComponent(ref)}`)).data;
    if (ctx.json) return printJson(c);
    printText(details([['id', c.id], ['key', c.key], ['name', c.name], ['version', c.version], ['type', c.type], ['description', c.description]]));
    printText(`\nprops:\n${table(c.configurable_props ?? [], PROP_COLUMNS, '(none)')}`);
    return;
  }
  const { kind, item } = opts.type ? { kind: opts.type, item: await resolveNamed(ctx.api, opts.type, ref) } : await resolveAny(ctx.api, ref, ['source', 'workflow', 'webhook']);
  if (kind === 'source') {
    const s = (await ctx.api.get(`/v1/sources/${item.id}`)).data;
    const c = (await ctx.api.get(`/v1/components/${encodeURIComponent(s.component_id)}`)).data;
    if (ctx.json) return printJson({ ...s, component: c });
    printSource(ctx, s, undefined, `${c.key ?? c.name}@${c.version} (${c.id})`);
    printText(`\nits component's props:\n${table(c.configurable_props ?? [], PROP_COLUMNS, '(none)')}`);
    return;
  }
  if (kind === 'workflow') {
    const w = (await ctx.api.get(`/v1/workflows/${item.id}`)).data;
    if (ctx.json) return printJson(w);
    printText(details([
      ['id', w.id], ['name', w.name], ['slug', w.name_slug], ['active', w.active ? 'yes' : 'no'], ['trigger', triggerText(w.trigger)], ['settings', w.settings],
      ...(w.backlog ? [['backlog', backlogText(w.backlog)] as [string, string]] : []), ['created', time(w.created_at)], ['updated', time(w.updated_at)],
    ]));
    printText(`\nsteps:\n${table(w.steps ?? [], [
      { header: 'name', value: (s: Record<string, any>) => s.name },
      { header: 'component', value: (s: Record<string, any>) => s.key ?? s.component_id ?? '(code)' },
      { header: 'props', value: (s: Record<string, any>) => s.configured_props },
    ], '(none)')}`);
    return;
  }
  const h = (await ctx.api.get(`/v1/webhooks/${item.id}`)).data;
  if (ctx.json) return printJson(h);
  printText(details([['id', h.id], ['name', h.name], ['description', h.description], ['url', h.url], ['active', h.active === false ? 'no' : 'yes'], ['created', time(h.created_at)]]));
}

const PROP_COLUMNS: Column<ConfigurableProp>[] = [
  { header: 'name', value: (p) => p.name },
  { header: 'type', value: (p) => (p.secret ? `${p.type} (secret)` : p.type) },
  { header: 'required', value: (p) => (p.optional || p.default !== undefined || ['$.interface.http', '$.service.db', 'app'].includes(p.type) ? 'no' : 'yes') },
  { header: 'default', value: (p) => p.default },
  { header: 'label', value: (p) => p.label },
];

/** `pd events <source> [-n N] [-f]`. */
export async function events(ctx: Context, ref: string, opts: { n: number; follow?: boolean; eventName?: string }): Promise<void> {
  const interrupted = opts.follow ? interruptSignal() : undefined;
  const source = await resolveNamed(ctx.api, 'source', ref);
  const listed: EventSummary[] = (await ctx.api.get(`/v1/sources/${source.id}/event_summaries`, { expand: 'event', limit: opts.n, event_name: opts.eventName })).data;
  if (!opts.follow) {
    // People read oldest first, like tail; scripts get the API's order (newest first).
    if (ctx.json) printJson(listed);
    else printText(listed.length ? [...listed].reverse().map(eventLine).join('\n') : `no events yet for ${source.id}`);
    return;
  }
  const show = (e: EventSummary) => (ctx.json ? process.stdout.write(`${JSON.stringify(e)}\n`) : printText(eventLine(e)));
  [...listed].reverse().forEach(show);
  if (!ctx.json) process.stderr.write(`following events of ${source.id}; Ctrl-C to stop\n`);
  await followEvents(ctx.api, source.id, listed[0]?.id ?? '0-0', show, interrupted!, (why) => process.stderr.write(`reconnecting: ${why}\n`), opts.eventName);
}

/** `pd logs <source> [-f]`. */
export async function logs(ctx: Context, ref: string, opts: { follow?: boolean }): Promise<void> {
  const interrupted = opts.follow ? interruptSignal() : undefined;
  const source = await resolveNamed(ctx.api, 'source', ref);
  const show = (l: SourceLog) => (ctx.json ? process.stdout.write(`${JSON.stringify(l)}\n`) : printText(logLines(l)));
  if (!opts.follow) {
    const items: SourceLog[] = (await ctx.api.get(`/v1/sources/${source.id}/logs`)).data;
    if (ctx.json) printJson(items);
    else printText(items.length ? [...items].reverse().map(logLines).join('\n') : `no runs yet for ${source.id}`);
    return;
  }
  if (!ctx.json) process.stderr.write(`following logs of ${source.id}; Ctrl-C to stop\n`);
  await followLogs(ctx.api, source.id, show, interrupted!, { includeExisting: true, onError: (why) => process.stderr.write(`retrying: ${why}\n`) });
}
