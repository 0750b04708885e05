import { CliError, ServerError } from './cli-error';
import type { SluiceApi } from './sluice-api';

/** What a name can point at, with the list that holds it and its id prefix. */
const KINDS = {
  source: { list: '/v1/users/me/sources', one: '/v1/sources/', bySlug: true, prefix: 'dc_' },
  workflow: { list: '/v1/users/me/workflows', one: '/v1/workflows/', bySlug: true, prefix: 'p_' },
  webhook: { list: '/v1/users/me/webhooks', one: '/v1/webhooks/', bySlug: false, prefix: 'wh_' },
} as const;

/** A kind of named resource. */
export type NamedKind = keyof typeof KINDS;

/** A resource found by name: at least its id and name. */
export interface Named {
  id: string;
  name?: string;
  name_slug?: string;
  [k: string]: unknown;
}

/**
 * The items among `items` that `ref` names: the id, else the name slug, else the display name
 * (exact, then case-insensitive). Several items with that display name: all of them.
 */
export function matchName<T extends Named>(items: T[], ref: string): T[] {
  const byId = items.filter((i) => i.id === ref);
  if (byId.length) return byId;
  const bySlug = items.filter((i) => i.name_slug === ref);
  if (bySlug.length) return bySlug;
  const byName = items.filter((i) => i.name === ref);
  if (byName.length) return byName;
  return items.filter((i) => typeof i.name === 'string' && i.name.toLowerCase() === ref.toLowerCase());
}

/**
 * Resolves a source, workflow or webhook named by id, name slug or display name, through the
 * list endpoint. Nothing found: "no source named ..."; several: an error listing each candidate
 * with its id, so that the user can pick one.
 */
export async function resolveNamed(api: SluiceApi, kind: NamedKind, ref: string): Promise<Named> {
  // An id (or a slug, which the API also takes) is looked up directly, without listing them all;
  // only a display name needs the list.
  const k = KINDS[kind];
  if (/^[A-Za-z0-9_-]+$/.test(ref) && (k.bySlug || ref.startsWith(k.prefix))) {
    try {
      const one = (await api.get<{ data: Named }>(`${k.one}${encodeURIComponent(ref)}`)).data;
      if (one.id === ref || one.name_slug === ref) return one;
    } catch (e) {
      if (!(e instanceof ServerError && e.status === 404)) throw e;
    }
  }
  const items = await api.all<Named>(KINDS[kind].list);
  const found = matchName(items, ref);
  if (found.length === 1) return found[0];
  if (found.length === 0) throw new CliError(`no ${kind} named "${ref}" (pd list ${kind}s shows them)`);
  throw new CliError(`"${ref}" names ${found.length} ${kind}s: ${found.map((f) => `${f.id} (${f.name_slug ?? f.name})`).join(', ')}; use an id`);
}

/** The kind an id's prefix tells (`dc_` source, `p_` workflow, `wh_` webhook), if any. */
export function kindOfId(ref: string): NamedKind | undefined {
  return (Object.keys(KINDS) as NamedKind[]).find((k) => ref.startsWith(KINDS[k].prefix) && ref.length > KINDS[k].prefix.length + 4);
}
