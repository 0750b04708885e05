import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { clientSettings, configPath, defaultUrl, readProfiles, writeProfile, type ClientSettings } from './cli-config';
import { CliError, EXIT, ServerError } from './cli-error';
import { runDev } from './dev-mode';
import { eventLine, followEvents, followLogs, logLines, type EventSummary, type SourceLog } from './follow';
import { kindOfId, matchName, resolveNamed, type Named, type NamedKind } from './names';
import { details, printJson, printText, table, time, type Column } from './output';
import { bundleComponentFile, looksLikeFile, resolveComponent, type SavedComponent } from './pd-client';
import { withProgress } from './progress';
import { askHidden } from './prompt';
import { askForProps, commandLineProps, mergeForUpdate, unsetPropsError, unsetRequiredProps, type ConfigurableProp } from './props';
import { SluiceApi } from './sluice-api';
import { actionTemplate, appTemplate, slugify, sourceTemplate } from './templates';

/** Printed by `pd help` and `pd --help`: what scripts can rely on. */
export const EXIT_CODES_HELP = `
Exit codes:
  0  done
  1  the command failed: the server refused it (the line says why), a run failed, a name matched nothing
  2  usage error: bad or missing arguments, a missing local file, a required prop left unset
  3  the server could not be reached
  4  no API key, or the server refused the key

Configuration: ${'$'}XDG_CONFIG_HOME/sluice/config (default ~/.config/sluice/config), written by pd login;
SLUICE_API_KEY and SLUICE_URL override it; --profile NAME (or SLUICE_PROFILE) picks a profile.
Output is for people; --json gives JSON for scripts (one JSON value per line when following).`;

/** The version in package.json (dist/apps/cli is three levels below it); `unknown` if it cannot be read. */
function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** The global options every command sees. */
interface GlobalOptions {
  profile?: string;
  json?: boolean;
}

/** What each client command works with. */
interface Context {
  api: SluiceApi;
  json: boolean;
  settings: ClientSettings;
}

function context(cmd: Command): Context {
  const o = cmd.optsWithGlobals<GlobalOptions>();
  const settings = clientSettings(o.profile);
  return { api: new SluiceApi(settings.url, settings.key), json: o.json === true, settings };
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** `-n` of `pd events` and `pd runs`: an integer from 1 to 100. */
function count(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 100) throw new InvalidArgumentError('must be an integer from 1 to 100.');
  return n;
}

const SOURCE_COLUMNS: Column<Record<string, any>>[] = [
  { header: 'id', value: (s) => s.id },
  { header: 'name', value: (s) => s.name },
  { header: 'slug', value: (s) => s.name_slug },
  { header: 'active', value: (s) => (s.active ? 'yes' : 'no') },
  { header: 'status', value: (s) => (s.failing ? `${s.status} (failing)` : s.status) },
  { header: 'endpoint', value: (s) => s.endpoint_url },
];

function triggerText(t: Record<string, any> | undefined): string {
  if (!t) return '';
  if (t.type === 'http') return `http ${t.endpoint_url ?? ''}`.trim();
  if (t.type === 'timer') return t.cron ? `cron ${t.cron}` : `every ${t.interval_seconds} s`;
  if (t.type === 'emitter') return `emitter ${t.emitter_id}${t.event_name ? ` [${t.event_name}]` : ''}`;
  return String(t.type);
}

const WORKFLOW_COLUMNS: Column<Record<string, any>>[] = [
  { header: 'id', value: (w) => w.id },
  { header: 'name', value: (w) => w.name },
  { header: 'slug', value: (w) => w.name_slug },
  { header: 'active', value: (w) => (w.active ? 'yes' : 'no') },
  { header: 'trigger', value: (w) => triggerText(w.trigger) },
  { header: 'steps', value: (w) => (w.steps ?? []).map((s: { name: string }) => s.name).join(', ') },
];

const WEBHOOK_COLUMNS: Column<Record<string, any>>[] = [
  { header: 'id', value: (w) => w.id },
  { header: 'name', value: (w) => w.name },
  { header: 'url', value: (w) => w.url },
  { header: 'active', value: (w) => (w.active === false ? 'no' : 'yes') },
];

const SUBSCRIPTION_COLUMNS: Column<Record<string, any>>[] = [
  { header: 'id', value: (s) => s.id },
  { header: 'emitter', value: (s) => s.emitter_id },
  { header: 'listener', value: (s) => s.listener_id },
  { header: 'event', value: (s) => s.event_name || '(all)' },
];

const COMPONENT_COLUMNS: Column<Record<string, any>>[] = [
  { header: 'key', value: (c) => c.key },
  { header: 'version', value: (c) => c.version },
  { header: 'type', value: (c) => c.type },
  { header: 'component id', value: (c) => c.component_id },
];

const ACCOUNT_COLUMNS: Column<Record<string, any>>[] = [
  { header: 'id', value: (a) => a.id },
  { header: 'app', value: (a) => a.app },
  { header: 'name', value: (a) => a.name },
  { header: 'healthy', value: (a) => (a.healthy === false ? 'no' : 'yes') },
];

/** What `pd list` lists: the list endpoint, its columns, and the words that name it. */
const LISTS: Record<string, { path: string; columns: Column<Record<string, any>>[]; words: string[]; paginated: boolean }> = {
  sources: { path: '/v1/users/me/sources', columns: SOURCE_COLUMNS, words: ['sources', 'source', 'src', 'dc'], paginated: true },
  workflows: { path: '/v1/users/me/workflows', columns: WORKFLOW_COLUMNS, words: ['workflows', 'workflow', 'wf', 'p'], paginated: true },
  webhooks: { path: '/v1/users/me/webhooks', columns: WEBHOOK_COLUMNS, words: ['webhooks', 'webhook', 'wh'], paginated: true },
  subscriptions: { path: '/v1/users/me/subscriptions', columns: SUBSCRIPTION_COLUMNS, words: ['subscriptions', 'subscription', 'subs', 'sub'], paginated: true },
  components: { path: '/v1/components/registry', columns: COMPONENT_COLUMNS, words: ['components', 'component', 'comp', 'registry'], paginated: false },
  accounts: { path: '/v1/users/me/accounts', columns: ACCOUNT_COLUMNS, words: ['accounts', 'account', 'acct', 'apn'], paginated: true },
};

function listKind(word: string): string {
  const found = Object.entries(LISTS).find(([, l]) => l.words.includes(word.toLowerCase()));
  if (!found) throw CliError.usage(`pd list takes one of ${Object.keys(LISTS).join(', ')}; got "${word}"`);
  return found[0];
}

async function list(ctx: Context, kind: string): Promise<void> {
  const l = LISTS[kind];
  const rows = l.paginated ? await ctx.api.all<Record<string, any>>(l.path) : (await ctx.api.get(l.path)).data;
  if (ctx.json) printJson(rows);
  else printText(table(rows, l.columns, `no ${kind}`));
}

/** Finds what a name points at when the command does not say which kind: each kind is tried, and two kinds matching is an error. */
async function resolveAny(api: SluiceApi, ref: string, kinds: NamedKind[]): Promise<{ kind: NamedKind; item: Named }> {
  const byId = kindOfId(ref);
  if (byId && kinds.includes(byId)) return { kind: byId, item: await resolveNamed(api, byId, ref) };
  const hits: { kind: NamedKind; item: Named }[] = [];
  for (const kind of kinds) {
    const items = await api.all<Named>(LISTS[`${kind}s`].path);
    const found = matchName(items, ref);
    if (found.length > 1) return { kind, item: await resolveNamed(api, kind, ref) };
    if (found.length === 1) hits.push({ kind, item: found[0] });
  }
  if (hits.length === 1) return hits[0];
  if (hits.length === 0) throw new CliError(`nothing named "${ref}" (no ${kinds.join(', no ')})`);
  throw new CliError(`"${ref}" names ${hits.map((h) => `a ${h.kind} (${h.item.id})`).join(' and ')}; use an id or --type`);
}

function printSource(ctx: Context, s: Record<string, any>, verb?: string, component: string = s.component_id): void {
  if (ctx.json) return printJson(s);
  if (verb) process.stderr.write(`${verb} ${s.id} (${s.name_slug})\n`);
  printText(details([
    ['id', s.id], ['name', s.name], ['slug', s.name_slug], ['active', s.active ? 'yes' : 'no'], ['status', s.status],
    ['endpoint', s.endpoint_url], ['component', component], ['props', s.configured_props],
    ['created', time(s.created_at)], ['updated', time(s.updated_at)],
    ['last error', s.last_error ?? undefined],
  ]));
}

function warn(c: SavedComponent | undefined): void {
  for (const w of c?.warnings ?? []) process.stderr.write(`warning: ${w.field} ${w.message}\n`);
}

/**
 * The configured props for a deploy: `--props` and `--prop` typed by the component's props;
 * required ones still unset are asked for on a terminal, else refused (exit 2).
 */
async function propsForDeploy(ctx: Context, component: SavedComponent | undefined, opts: { prop: string[]; props?: string }): Promise<Record<string, unknown>> {
  const given = commandLineProps(component?.configurable_props, opts.prop, opts.props);
  if (!component) return given;
  const missing = unsetRequiredProps(component.configurable_props, given);
  if (missing.length === 0) return given;
  if (!process.stdin.isTTY) throw unsetPropsError(missing);
  return askForProps(ctx.api, component.id, missing, given);
}

/** A component target that is a registry key (`key` or `key@version`): neither a URL nor a file. */
const isKeyTarget = (target: string) => !/^https?:\/\//.test(target) && !looksLikeFile(target);

async function deploy(ctx: Context, target: string, opts: { name?: string; prop: string[]; props?: string; active?: boolean }): Promise<void> {
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

async function update(ctx: Context, ref: string, opts: { code?: string; name?: string; activate?: boolean; deactivate?: boolean; prop: string[]; props?: string }): Promise<void> {
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

async function remove(ctx: Context, ref: string, opts: { type?: NamedKind; ignoreHookErrors?: boolean }): Promise<void> {
  const { kind, item } = opts.type ? { kind: opts.type, item: await resolveNamed(ctx.api, opts.type, ref) } : await resolveAny(ctx.api, ref, ['source', 'workflow', 'webhook']);
  await ctx.api.del(`${DELETE_PATHS[kind]}${item.id}`, kind === 'source' && opts.ignoreHookErrors ? { ignore_hook_errors: 'true' } : undefined);
  if (ctx.json) printJson({ id: item.id, kind, deleted: true });
  else printText(`deleted ${kind} ${item.id}${item.name ? ` (${item.name})` : ''}`);
}

async function describe(ctx: Context, ref: string, opts: { type?: NamedKind | 'component' }): Promise<void> {
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
    printText(details([['id', w.id], ['name', w.name], ['slug', w.name_slug], ['active', w.active ? 'yes' : 'no'], ['trigger', triggerText(w.trigger)], ['settings', w.settings], ['created', time(w.created_at)], ['updated', time(w.updated_at)]]));
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

async function events(ctx: Context, ref: string, opts: { n: number; follow?: boolean }): Promise<void> {
  const interrupted = opts.follow ? interruptSignal() : undefined;
  const source = await resolveNamed(ctx.api, 'source', ref);
  const listed: EventSummary[] = (await ctx.api.get(`/v1/sources/${source.id}/event_summaries`, { expand: 'event', limit: opts.n })).data;
  if (!opts.follow) {
    // People read oldest first, like tail; scripts get the API's order (newest first).
    if (ctx.json) printJson(listed);
    else printText(listed.length ? [...listed].reverse().map(eventLine).join('\n') : `no events yet for ${source.id}`);
    return;
  }
  const show = (e: EventSummary) => (ctx.json ? process.stdout.write(`${JSON.stringify(e)}\n`) : printText(eventLine(e)));
  [...listed].reverse().forEach(show);
  if (!ctx.json) process.stderr.write(`following events of ${source.id}; Ctrl-C to stop\n`);
  await followEvents(ctx.api, source.id, listed[0]?.id ?? '0-0', show, interrupted!, (why) => process.stderr.write(`reconnecting: ${why}\n`));
}

async function logs(ctx: Context, ref: string, opts: { follow?: boolean }): Promise<void> {
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

/**
 * An AbortSignal that Ctrl-C (or SIGTERM) aborts; stopping a follow is a success. Called first
 * thing in a following command, so that a Ctrl-C at any moment ends it cleanly; the handlers
 * stay until the process ends, so a second Ctrl-C while stopping does not kill it mid-way.
 */
export function interruptSignal(): AbortSignal {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return stop.signal;
}

async function publish(ctx: Context, file: string): Promise<void> {
  if (!existsSync(file)) throw CliError.usage(`no such file: ${file}`);
  const code = (await bundleComponentFile(file)).code;
  const saved = (await withProgress(`publishing ${file}`, ctx.api.post('/v1/components', { component_code: code, publish: true }))).data;
  warn(saved);
  if (ctx.json) return printJson(saved);
  // Plain key@version, so that `pd run $(pd publish action.mjs)` works.
  printText(`${saved.key}@${saved.version}`);
}

async function unpublish(ctx: Context, target: string): Promise<void> {
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

async function runAction(ctx: Context, target: string, opts: { prop: string[]; props?: string }): Promise<number> {
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

async function runs(ctx: Context, ref: string, opts: { n: number }): Promise<void> {
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

async function createWebhook(ctx: Context, url: string, opts: { name?: string; description?: string }): Promise<Record<string, any>> {
  let host: string;
  try {
    host = new URL(url).host;
  } catch {
    throw CliError.usage(`not a URL: ${url}`);
  }
  // The spec's clients send the creation parameters in the query string.
  return (await ctx.api.post('/v1/webhooks', undefined, { url, name: opts.name ?? host, description: opts.description ?? `created by pd for ${host}` })).data;
}

/** An emitter named by the user: a source or workflow (id, slug or name), or a glob / id as it is. */
async function emitterId(ctx: Context, ref: string): Promise<string> {
  if (/^(dc|p)_\*$/.test(ref)) return ref;
  return (await resolveAny(ctx.api, ref, ['source', 'workflow'])).item.id;
}

async function subscribe(ctx: Context, emitter: string, listener: string, opts: { eventName?: string; name?: string; description?: string }): Promise<void> {
  const emitter_id = await emitterId(ctx, emitter);
  let listener_id: string;
  if (/^https?:\/\//.test(listener)) {
    const hook = await createWebhook(ctx, listener, opts);
    if (!ctx.json) process.stderr.write(`created webhook ${hook.id} for ${listener}\n`);
    listener_id = hook.id;
  } else {
    listener_id = (await resolveAny(ctx.api, listener, ['webhook', 'workflow', 'source'])).item.id;
  }
  const sub = (await ctx.api.post('/v1/subscriptions', undefined, { emitter_id, listener_id, ...(opts.eventName ? { event_name: opts.eventName } : {}) })).data;
  if (ctx.json) return printJson(sub);
  printText(`subscribed ${sub.listener_id} to ${sub.emitter_id}${sub.event_name ? ` [${sub.event_name}]` : ''} (${sub.id})`);
}

async function unsubscribe(ctx: Context, first: string, listener: string | undefined, opts: { eventName?: string }): Promise<void> {
  if (!listener) {
    if (!first.startsWith('sub_')) throw CliError.usage('pd unsubscribe takes a subscription id (sub_...), or an emitter and a listener');
    await ctx.api.del(`/v1/subscriptions/${encodeURIComponent(first)}`);
    if (ctx.json) printJson({ id: first, deleted: true });
    else printText(`deleted subscription ${first}`);
    return;
  }
  const emitter_id = await emitterId(ctx, first);
  const listener_id = (await resolveAny(ctx.api, listener, ['webhook', 'workflow', 'source'])).item.id;
  await ctx.api.del('/v1/subscriptions', { emitter_id, listener_id, event_name: opts.eventName ?? '' });
  if (ctx.json) printJson({ emitter_id, listener_id, deleted: true });
  else printText(`unsubscribed ${listener_id} from ${emitter_id}`);
}

async function login(cmd: Command, opts: { apiKey?: string; url?: string }): Promise<void> {
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

async function whoami(ctx: Context): Promise<void> {
  const me = (await ctx.api.get('/v1/users/me')).data;
  if (ctx.json) return printJson({ ...me, base_url: ctx.settings.url, profile: ctx.settings.profile, key_from: ctx.settings.source });
  printText(details([['id', me.id], ['name', me.name], ['email', me.email], ['server', ctx.settings.url], ['profile', ctx.settings.profile], ['key from', ctx.settings.source]]));
}

function init(kind: string, name: string, opts: { http?: boolean; timer?: boolean; db?: boolean; dir: string; force?: boolean; json?: boolean }): void {
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

/**
 * The `pd` program: every command with its options and help. A command that ends with an exit
 * code other than 0 without an error (a failed `pd run`) reports it through `setExit`; errors
 * are thrown (CliError, ServerError) and turned into one line and their exit code by main.
 */
export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('pd');
  program
    .version(packageVersion(), '-V, --version', 'print pd\'s version')
    .description('The Sluice command-line client: deploy and develop sources, follow their events and logs, wire webhooks.')
    .option('--profile <name>', 'use this profile of the config file')
    .option('--json', 'print JSON for scripts instead of tables')
    .showSuggestionAfterError(true)
    .addHelpText('after', EXIT_CODES_HELP)
    .exitOverride()
    // One line per usage error (a suggestion joins it), as for every other error.
    .configureOutput({ outputError: (text, write) => write(`${text.trim().split('\n').join(' ')}\n`) });

  program.command('login').description('save an API key (asked for, or --api-key) and server URL into a profile of the config file')
    .option('--api-key <key>', 'the key (else asked for on the terminal)')
    .option('--url <url>', 'the server (default: SLUICE_URL, the profile\'s, or http://127.0.0.1:8080)')
    .action((opts, cmd: Command) => login(cmd, opts));

  program.command('whoami').description('the account of the configured key, and where the key came from')
    .action((_opts, cmd: Command) => whoami(context(cmd)));

  program.command('list').alias('ls').argument('<what>', `one of ${Object.keys(LISTS).join(', ')} (or src, wf, wh, sub, comp, acct)`)
    .description('list sources, workflows, webhooks, subscriptions, components (the registry) or connected accounts')
    .action((what: string, _opts, cmd: Command) => {
      const kind = listKind(what);
      return list(context(cmd), kind);
    });
  for (const kind of ['sources', 'workflows', 'subscriptions', 'components', 'accounts']) {
    program.command(kind).description(`same as pd list ${kind}`).action((_opts, cmd: Command) => list(context(cmd), kind));
  }

  program.command('describe').argument('<name>', 'id, name slug or display name').description('show one source, workflow, webhook or component in full')
    .addOption(new Option('--type <kind>', 'what the name is, when it names several kinds').choices(['source', 'workflow', 'webhook', 'component']))
    .action((ref: string, opts, cmd: Command) => describe(context(cmd), ref, opts));

  const propOptions = (c: Command) => c
    .option('--prop <name=value>', 'a configured prop, typed by the component (repeatable); a timer takes seconds or a cron string', collect, [])
    .option('--props <file.json>', 'configured props from a JSON file (--prop wins)');

  propOptions(program.command('deploy').argument('<target>', 'a file (bundled with its relative imports), a registry key[@version] or a URL to raw code')
    .description('deploy a source; required props are asked for on a terminal, refused otherwise')
    .option('--name <name>', 'the source\'s name')
    .option('--inactive', 'deploy it deactivated'))
    .action((target: string, opts, cmd: Command) => deploy(context(cmd), target, { ...opts, active: opts.inactive ? false : undefined }));

  propOptions(program.command('dev').argument('<file>', 'the source file').description('deploy a source file (or attach to --dc), then update it on every save of the file or a file it imports, streaming its logs and events; Ctrl-C leaves it deployed')
    .option('--dc <source>', 'attach to this deployed source instead of deploying a new one')
    .option('--name <name>', 'the new source\'s name'))
    .action((file: string, opts, cmd: Command) => {
      const ctx = context(cmd);
      return runDev(ctx.api, file, interruptSignal(), { ...opts, json: ctx.json, propsForDeploy: (c: SavedComponent) => propsForDeploy(ctx, c, opts) });
    });

  propOptions(program.command('update').argument('<source>', 'id, name slug or display name').description('change a deployed source; it keeps its id')
    .option('--code <file | key | url>', 'new code')
    .option('--name <name>', 'new name')
    .option('--activate', 'activate it')
    .option('--deactivate', 'deactivate it'))
    .action((ref: string, opts, cmd: Command) => update(context(cmd), ref, opts));

  program.command('delete').alias('rm').argument('<name>', 'a source, workflow or webhook: id, name slug or display name').description('delete a source, workflow or webhook')
    .addOption(new Option('--type <kind>', 'what the name is, when it names several kinds').choices(['source', 'workflow', 'webhook']))
    .option('--ignore-hook-errors', 'delete a source even if its deactivate hook fails')
    .action((ref: string, opts, cmd: Command) => remove(context(cmd), ref, opts));

  program.command('publish').argument('<file>', 'an action or source file').description('publish a component into the account\'s registry; prints key@version')
    .action((file: string, _opts, cmd: Command) => publish(context(cmd), file));
  program.command('unpublish').argument('<key[@version]>').description('remove a published component (one version, or every version of the key) from the account\'s registry')
    .action((key: string, _opts, cmd: Command) => unpublish(context(cmd), key));

  propOptions(program.command('run').argument('<action>', 'an action key[@version] or file').description('run an action once; prints ret, exports, summary and logs as JSON (exit 1 when the run failed)'))
    .action(async (target: string, opts, cmd: Command) => setExit(await runAction(context(cmd), target, opts)));

  program.command('runs').argument('<workflow>', 'id, name slug or display name').description('the last runs of a workflow, each step\'s status')
    .option('-n <count>', 'how many (1 to 100)', count, 10)
    .action((ref: string, opts, cmd: Command) => runs(context(cmd), ref, { n: opts.n }));

  program.command('logs').argument('<source>', 'id, name slug or display name').description('a source\'s recent runs and hooks with their logs, oldest first')
    .option('-f, --follow', 'keep printing new ones')
    .action((ref: string, opts, cmd: Command) => logs(context(cmd), ref, opts));

  program.command('events').argument('<source>', 'id, name slug or display name').description('a source\'s last emitted events (oldest first; --json: newest first)')
    .option('-n <count>', 'how many (1 to 100)', count, 10)
    .option('-f, --follow', 'keep printing new ones')
    .action((ref: string, opts, cmd: Command) => events(context(cmd), ref, { n: opts.n, follow: opts.follow }));

  program.command('init').argument('<kind>', 'source, action or app').argument('<name>', 'the component\'s name')
    .description('write a component file from a template that deploys as it is')
    .option('--http', 'source: an HTTP endpoint (the default)')
    .option('--timer', 'source: a timer (every 15 minutes)')
    .option('--db', 'source: a key-value store kept between runs')
    .option('--dir <dir>', 'where to write it', '.')
    .option('--force', 'overwrite an existing file')
    .action((kind: string, name: string, opts, cmd: Command) => {
      if (!['source', 'action', 'app'].includes(kind)) throw CliError.usage(`pd init takes source, action or app; got "${kind}"`);
      init(kind, name, { ...opts, json: cmd.optsWithGlobals<GlobalOptions>().json });
    });

  const webhooks = program.command('webhooks').alias('webhook').description('list, create and delete webhooks (spec 4.5)');
  webhooks.command('list', { isDefault: true }).description('list webhooks').action((_opts, cmd: Command) => list(context(cmd), 'webhooks'));
  webhooks.command('create').argument('<url>', 'where events are delivered').description('create a webhook; prints its id and signing secret')
    .option('--name <name>', 'its name (default: the URL\'s host)')
    .option('--description <text>', 'its description')
    .action(async (url: string, opts, cmd: Command) => {
      const ctx = context(cmd);
      const hook = await createWebhook(ctx, url, opts);
      if (ctx.json) return printJson(hook);
      printText(details([['id', hook.id], ['name', hook.name], ['url', hook.url], ['signing secret', hook.signing_secret]]));
    });
  webhooks.command('delete').argument('<webhook>', 'id or name').description('delete a webhook and its subscriptions')
    .action((ref: string, _opts, cmd: Command) => remove(context(cmd), ref, { type: 'webhook' }));

  program.command('subscribe').argument('<emitter>', 'a source or workflow (id, slug or name), or dc_* / p_*')
    .argument('<listener>', 'a webhook (id or name) or a URL (a webhook is created for it), or a workflow or source')
    .description('deliver an emitter\'s events to a listener (spec 4.5)')
    .option('--event-name <channel>', 'only this channel ($errors, $logs, ...)')
    .option('--name <name>', 'name of the webhook created for a URL')
    .option('--description <text>', 'description of the webhook created for a URL')
    .action((emitter: string, listener: string, opts, cmd: Command) => subscribe(context(cmd), emitter, listener, opts));
  program.command('unsubscribe').argument('<subscription | emitter>').argument('[listener]')
    .description('delete a subscription, by id or by emitter and listener')
    .option('--event-name <channel>', 'the channel of the subscription')
    .action((first: string, listener: string | undefined, opts, cmd: Command) => unsubscribe(context(cmd), first, listener, opts));

  const admin = program.command('admin').description('admin commands on the data directory (SLUICE_DATA_DIR); stop the server first');
  const adminCommands = (parent: Command, hidden: boolean) => {
    parent.command('create-account', { hidden }).description('create an account and print its API key (JSON)')
      .option('--name <name>', 'the account\'s name').option('--key <key>', 'the API key (default: a random one)')
      .action(async (opts) => setExit(await (await import('./admin')).runAdmin('create-account', opts)));
    parent.command('rebuild', { hidden }).description('drop every read model and rebuild it from the log (JSON)')
      .action(async () => setExit(await (await import('./admin')).runAdmin('rebuild', {})));
  };
  adminCommands(admin, false);
  // The old forms (`npm run admin -- create-account`), kept for scripts.
  adminCommands(program, true);
  return program;
}
