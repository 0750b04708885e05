import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import { CliError, ServerError } from './cli-error';
import { askHidden } from './prompt';
import type { SluiceApi } from './sluice-api';

/** A configurable prop as `GET /v1/components/{id}` lists it. */
export interface ConfigurableProp {
  name: string;
  type: string;
  label?: string;
  description?: string;
  optional?: boolean;
  default?: unknown;
  secret?: boolean;
  options?: unknown;
  useQuery?: boolean;
  min?: number;
  max?: number;
}

/** Props the server wires itself: never asked for, never given on the command line. */
const WIRED = new Set(['$.interface.http', '$.service.db', '$.interface.apphook']);

const isTimer = (p: ConfigurableProp) => p.type === '$.interface.timer';

/** A timer from the command line: a number of seconds (`60`), a cron expression, or the JSON object. */
export function timerValue(text: string): Record<string, unknown> {
  const t = text.trim();
  if (/^\d+$/.test(t)) return { intervalSeconds: Number(t) };
  if (t.startsWith('{')) {
    try {
      return JSON.parse(t) as Record<string, unknown>;
    } catch {
      throw new Error('is not valid JSON');
    }
  }
  if (t.split(/\s+/).length >= 5 || t.startsWith('@')) return { cron: t };
  throw new Error('takes a number of seconds (60) or a cron expression ("*/5 * * * *")');
}

function booleanValue(text: string): boolean {
  const t = text.trim().toLowerCase();
  if (['true', 'yes', 'y', '1', 'on'].includes(t)) return true;
  if (['false', 'no', 'n', '0', 'off'].includes(t)) return false;
  throw new Error('takes true or false');
}

function integerValue(text: string): number {
  const t = text.trim();
  if (!/^-?\d+$/.test(t)) throw new Error(`takes an integer, got "${text}"`);
  return Number(t);
}

function scalarValue(base: string, text: string): unknown {
  if (base === 'integer') return integerValue(text);
  if (base === 'boolean') return booleanValue(text);
  return text;
}

/**
 * One value typed by its prop: integers and booleans parsed, `type[]` from a JSON array or a
 * comma-separated list, `object` from JSON, a timer from seconds or a cron string, an app prop
 * from an `apn_` id; `string` stays text. An unknown type (or no prop) takes JSON when it
 * parses, else the text. Throws an Error saying what the value should look like.
 */
export function propValue(text: string, prop: Pick<ConfigurableProp, 'type'> | undefined): unknown {
  const type = prop?.type;
  if (type === undefined || type === 'any') {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  if (type === '$.interface.timer') return timerValue(text);
  if (type === 'app') return text.startsWith('{') ? JSON.parse(text) : { authProvisionId: text };
  if (type === 'object') {
    try {
      const v = JSON.parse(text);
      if (v && typeof v === 'object' && !Array.isArray(v)) return v;
    } catch {
      // Reported below, the same as JSON that is not an object.
    }
    throw new Error('takes a JSON object, e.g. \'{"a":1}\'');
  }
  if (type.endsWith('[]')) {
    const base = type.slice(0, -2);
    if (text.trim().startsWith('[')) {
      let v: unknown;
      try {
        v = JSON.parse(text);
      } catch {
        throw new Error('is not a valid JSON array');
      }
      if (!Array.isArray(v)) throw new Error('takes a JSON array');
      return v.map((item) => (typeof item === 'string' && base !== 'string' ? scalarValue(base, item) : item));
    }
    return text === '' ? [] : text.split(',').map((item) => scalarValue(base, base === 'string' ? item : item.trim()));
  }
  return scalarValue(type, text);
}

/**
 * `--props file.json` then `--prop name=value` (the latter win), typed by the component's props.
 * A prop the component does not have, or a value of the wrong shape, is a usage error naming it.
 */
export function commandLineProps(props: ConfigurableProp[] | undefined, pairs: string[], file?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (file) {
    if (!existsSync(file)) throw CliError.usage(`no such file: ${file}`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8'));
    } catch (e) {
      throw CliError.usage(`--props ${file}: not valid JSON (${(e as Error).message})`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw CliError.usage(`--props ${file}: must hold a JSON object of prop values`);
    Object.assign(out, parsed);
  }
  const byName = new Map((props ?? []).map((p) => [p.name, p]));
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw CliError.usage(`--prop takes name=value, got "${pair}"`);
    const name = pair.slice(0, eq);
    const prop = byName.get(name);
    if (props && !prop) throw CliError.usage(`--prop ${name}: the component has no such prop (its props: ${[...byName.keys()].join(', ') || 'none'})`);
    if (prop && WIRED.has(prop.type)) throw CliError.usage(`--prop ${name}: a ${prop.type} prop is set up by the server, not configured`);
    try {
      out[name] = propValue(pair.slice(eq + 1), prop);
    } catch (e) {
      throw CliError.usage(`--prop ${name} ${(e as Error).message}`);
    }
  }
  return out;
}

/** The props a deploy still needs: required (not optional, no default) and not given; timers without a default count; app props are the server's to check. */
export function unsetRequiredProps(props: ConfigurableProp[], given: Record<string, unknown>): ConfigurableProp[] {
  // App props are left to the server: an app file's prop needs no connected account.
  return props.filter((p) => !WIRED.has(p.type) && p.type !== 'app' && given[p.name] === undefined && p.default === undefined && (isTimer(p) || !p.optional));
}

/** The refusal when required props are unset and nobody can be asked: one line naming them. */
export function unsetPropsError(missing: ConfigurableProp[]): CliError {
  const how = missing.map((p) => (isTimer(p) ? `--prop ${p.name}=60 (seconds) or --prop ${p.name}="0 * * * *"` : `--prop ${p.name}=...`));
  return CliError.usage(`required prop${missing.length > 1 ? 's' : ''} not set: ${missing.map((p) => p.name).join(', ')} (give ${how.join(' ')} or --props file.json)`);
}

type OptionItem = { label: string; value: unknown };

function normaliseOptions(raw: unknown): OptionItem[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((o) => (o && typeof o === 'object' && 'value' in o
    ? { label: String((o as { label?: unknown }).label ?? JSON.stringify((o as { value: unknown }).value)), value: (o as { value: unknown }).value }
    : { label: typeof o === 'string' ? o : JSON.stringify(o), value: o }));
}

/** One page of a prop's options, and what to send for the next page (none: the last page). */
export interface OptionsPage {
  options: OptionItem[];
  next?: { page: number; prevContext: unknown };
}

/**
 * A page of a prop's options: its static list, else the component's async `options` method
 * through `POST /v1/components/{id}/props/{prop}/options` (`page`, `prev_context`, `query`).
 * A server without that endpoint (404) or a prop without options (400) means free text: no options.
 */
export async function propOptions(api: SluiceApi, componentId: string, prop: ConfigurableProp, configured: Record<string, unknown>, from: { page: number; prevContext?: unknown; query?: string } = { page: 0 }): Promise<OptionsPage> {
  const fixed = normaliseOptions(prop.options);
  if (fixed.length) return { options: from.page === 0 ? fixed : [] };
  if (WIRED.has(prop.type) || isTimer(prop) || prop.type === 'boolean') return { options: [] };
  try {
    const answer = await api.post(`/v1/components/${encodeURIComponent(componentId)}/props/${encodeURIComponent(prop.name)}/options`, {
      configured_props: configured, page: from.page, ...(from.prevContext !== undefined ? { prev_context: from.prevContext } : {}), ...(from.query !== undefined ? { query: from.query } : {}),
    });
    const data = answer?.data ?? {};
    const options = normaliseOptions(Array.isArray(data) ? data : data.options);
    // Async options page by `page` (asked until a page comes back empty) or by `context`
    // (`prevContext` on the next call): either way a page with options may have a next one.
    return { options, ...(options.length ? { next: { page: from.page + 1, prevContext: data.context } } : {}) };
  } catch (e) {
    if (e instanceof ServerError && e.status === 404) return { options: [] };
    // The component could not list options (a ConfigurationError says why): say so, then free text.
    if (e instanceof ServerError && e.status === 400) {
      process.stderr.write(`  no options for ${prop.name}: ${e.message}\n`);
      return { options: [] };
    }
    throw e;
  }
}

/**
 * Asks, on the terminal, for each prop in `missing` (stdout stays for results: prompts go to
 * stderr). A prop with options shows them numbered (`m` loads the next page of async options;
 * a `useQuery` prop asks for a search first); the answer is a number or a value. A secret is
 * not echoed. A value of the wrong shape is asked again. Returns the props with the answers added.
 */
export async function askForProps(api: SluiceApi, componentId: string, missing: ConfigurableProp[], given: Record<string, unknown>): Promise<Record<string, unknown>> {
  const out = { ...given };
  for (const prop of missing) {
    const title = prop.label && prop.label !== prop.name ? `${prop.label} (${prop.name})` : prop.name;
    process.stderr.write(`${title}${prop.description ? `: ${prop.description}` : ''}\n`);
    if (prop.secret) {
      for (;;) {
        const answer = await askHidden(`${prop.name} [secret, not shown]: `);
        if (answer !== '') {
          out[prop.name] = answer;
          break;
        }
        process.stderr.write('  a value is required\n');
      }
      continue;
    }
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    try {
      const query = prop.useQuery ? (await rl.question(`${prop.name}: search for: `)).trim() : undefined;
      let page = await propOptions(api, componentId, prop, out, { page: 0, query });
      const options = [...page.options];
      const show = (items: OptionItem[], from: number) => items.forEach((o, i) => process.stderr.write(`  ${from + i + 1}) ${o.label}\n`));
      show(options, 0);
      for (;;) {
        const more = page.next ? ', m for more' : '';
        const hint = isTimer(prop) ? 'seconds or cron expression' : options.length ? `1-${options.length} or a value${more}` : prop.type;
        const answer = (await rl.question(`${prop.name} [${hint}]: `)).trim();
        if (answer === '') {
          process.stderr.write('  a value is required\n');
          continue;
        }
        if (answer === 'm' && page.next) {
          page = await propOptions(api, componentId, prop, out, { ...page.next, query });
          if (page.options.length === 0) process.stderr.write('  no more options\n');
          show(page.options, options.length);
          options.push(...page.options);
          continue;
        }
        const n = Number(answer);
        if (options.length && Number.isInteger(n) && n >= 1 && n <= options.length) {
          out[prop.name] = options[n - 1].value;
          break;
        }
        try {
          out[prop.name] = propValue(answer, prop);
          break;
        } catch (e) {
          process.stderr.write(`  ${prop.name} ${(e as Error).message}\n`);
        }
      }
    } finally {
      rl.close();
    }
  }
  return out;
}

/**
 * The full configured props for `PUT /v1/sources/{id}`, which replaces them all: the source's
 * current values (as the API returns them: timers turned back into `{intervalSeconds}` or
 * `{cron, timezone}`, server-wired props left out) with `changes` on top. Secret values are
 * never returned, so a required secret prop must be given again: a usage error says so.
 */
export function mergeForUpdate(props: ConfigurableProp[], current: Record<string, unknown>, changes: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of props) {
    const v = current[p.name];
    if (v === undefined || WIRED.has(p.type)) continue;
    if (isTimer(p)) {
      const t = v as { cron?: string | null; interval_seconds?: number | null; timezone?: string | null };
      if (t.cron) out[p.name] = { cron: t.cron, ...(t.timezone ? { timezone: t.timezone } : {}) };
      else if (t.interval_seconds) out[p.name] = { intervalSeconds: t.interval_seconds };
      continue;
    }
    out[p.name] = v;
  }
  Object.assign(out, changes);
  const lostSecrets = props.filter((p) => p.secret && out[p.name] === undefined && !p.optional && p.default === undefined);
  if (lostSecrets.length) throw CliError.usage(`secret prop${lostSecrets.length > 1 ? 's' : ''} ${lostSecrets.map((p) => p.name).join(', ')} must be given again with --prop (secrets are never sent back)`);
  return out;
}
