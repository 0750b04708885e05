import { CliError } from '../cli-error';
import { kindOfId, matchName, resolveNamed, type Named, type NamedKind } from '../names';
import { printJson, printText, table, type Column } from '../output';
import type { SluiceApi } from '../sluice-api';
import type { Context } from './context';

const SOURCE_COLUMNS: Column<Record<string, any>>[] = [
  { header: 'id', value: (s) => s.id },
  { header: 'name', value: (s) => s.name },
  { header: 'slug', value: (s) => s.name_slug },
  { header: 'active', value: (s) => (s.active ? 'yes' : 'no') },
  { header: 'status', value: (s) => (s.failing ? `${s.status} (failing)` : s.status) },
  { header: 'endpoint', value: (s) => s.endpoint_url },
];

/** A workflow trigger on one line: `http <url>`, `every 60 s`, `cron ...`, `emitter dc_...`. */
export function triggerText(t: Record<string, any> | undefined): string {
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
export const LISTS: Record<string, { path: string; columns: Column<Record<string, any>>[]; words: string[]; paginated: boolean }> = {
  sources: { path: '/v1/users/me/sources', columns: SOURCE_COLUMNS, words: ['sources', 'source', 'src', 'dc'], paginated: true },
  workflows: { path: '/v1/users/me/workflows', columns: WORKFLOW_COLUMNS, words: ['workflows', 'workflow', 'wf', 'p'], paginated: true },
  webhooks: { path: '/v1/users/me/webhooks', columns: WEBHOOK_COLUMNS, words: ['webhooks', 'webhook', 'wh'], paginated: true },
  subscriptions: { path: '/v1/users/me/subscriptions', columns: SUBSCRIPTION_COLUMNS, words: ['subscriptions', 'subscription', 'subs', 'sub'], paginated: true },
  components: { path: '/v1/components/registry', columns: COMPONENT_COLUMNS, words: ['components', 'component', 'comp', 'registry'], paginated: false },
  accounts: { path: '/v1/users/me/accounts', columns: ACCOUNT_COLUMNS, words: ['accounts', 'account', 'acct', 'apn'], paginated: true },
};

/** The list a word names (`sources`, `src`, `wh`, ...); anything else is a usage error listing them. */
export function listKind(word: string): string {
  const found = Object.entries(LISTS).find(([, l]) => l.words.includes(word.toLowerCase()));
  if (!found) throw CliError.usage(`pd list takes one of ${Object.keys(LISTS).join(', ')}; got "${word}"`);
  return found[0];
}

/** Prints one list: a table, or its items as JSON with --json. */
export async function list(ctx: Context, kind: string): Promise<void> {
  const l = LISTS[kind];
  const rows = l.paginated ? await ctx.api.all<Record<string, any>>(l.path) : (await ctx.api.get(l.path)).data;
  if (ctx.json) printJson(rows);
  else printText(table(rows, l.columns, `no ${kind}`));
}

/** Finds what a name points at when the command does not say which kind: each kind is tried, and two kinds matching is an error. */
export async function resolveAny(api: SluiceApi, ref: string, kinds: NamedKind[]): Promise<{ kind: NamedKind; item: Named }> {
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
