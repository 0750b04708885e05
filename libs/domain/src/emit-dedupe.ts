/** An emit as produced by a run. */
export interface PendingEmit {
  event: unknown;
  meta: { id?: string | number; name?: string; summary?: string; ts?: number };
}

/** The dedupe cache of a source, rebuilt from its stream. */
export interface DedupeCache {
  /** `unique`: last 100 ids, oldest first. */
  unique: string[];
  /** `greatest`: largest id seen. */
  greatest?: number;
  /** `last`: id of the last emitted event. */
  last?: string;
}

export const UNIQUE_CACHE_SIZE = 100;

export function emptyDedupeCache(): DedupeCache {
  return { unique: [] };
}

/** What `applyDedupe` decided: emits to record in order, and a log line for each refused one. */
export interface DedupeOutcome {
  accepted: PendingEmit[];
  refused: { emit: PendingEmit; reason: string }[];
  cache: DedupeCache;
}

/**
 * Orders one run's emits oldest to newest when they carry `ts` (a stable sort; emits without
 * `ts` keep their place after those with one), then applies the dedupe strategy of spec 6.2.
 * Pure: the input cache is not modified.
 */
export function applyDedupe(
  emits: PendingEmit[],
  strategy: 'unique' | 'greatest' | 'last' | undefined,
  cache: DedupeCache,
): DedupeOutcome {
  const ordered = emits.some((e) => typeof e.meta.ts === 'number')
    ? emits
        .map((e, i) => ({ e, i }))
        .sort((a, b) => {
          const ta = typeof a.e.meta.ts === 'number' ? a.e.meta.ts : Infinity;
          const tb = typeof b.e.meta.ts === 'number' ? b.e.meta.ts : Infinity;
          return ta === tb ? a.i - b.i : ta - tb;
        })
        .map((x) => x.e)
    : emits;
  const next: DedupeCache = { unique: [...cache.unique], greatest: cache.greatest, last: cache.last };
  const accepted: PendingEmit[] = [];
  const refused: { emit: PendingEmit; reason: string }[] = [];
  if (!strategy) return { accepted: ordered, refused, cache: next };

  const withId: PendingEmit[] = [];
  for (const e of ordered) {
    if (e.meta.id === undefined || e.meta.id === null || e.meta.id === '') {
      refused.push({ emit: e, reason: `$emit without an id is refused: the source uses dedupe "${strategy}", which needs meta.id` });
    } else withId.push(e);
  }

  if (strategy === 'unique') {
    const seen = new Set(next.unique);
    for (const e of withId) {
      const id = String(e.meta.id);
      if (seen.has(id)) continue;
      accepted.push(e);
      seen.add(id);
      next.unique.push(id);
      if (next.unique.length > UNIQUE_CACHE_SIZE) seen.delete(next.unique.shift()!);
    }
  } else if (strategy === 'greatest') {
    for (const e of withId) {
      const n = typeof e.meta.id === 'number' ? e.meta.id : Number(e.meta.id);
      if (!Number.isFinite(n) || (typeof e.meta.id === 'string' && e.meta.id.trim() === '')) {
        refused.push({ emit: e, reason: `dedupe "greatest" needs a numeric id, got ${JSON.stringify(e.meta.id)}` });
        continue;
      }
      if (next.greatest === undefined || n > next.greatest) {
        accepted.push(e);
        next.greatest = n;
      }
    }
  } else {
    const idx = next.last === undefined ? -1 : withId.findIndex((e) => String(e.meta.id) === next.last);
    const fresh = idx >= 0 ? withId.slice(idx + 1) : withId;
    accepted.push(...fresh);
    if (fresh.length > 0) next.last = String(fresh[fresh.length - 1].meta.id);
  }
  return { accepted, refused, cache: next };
}

/**
 * Updates a dedupe cache with an emit that was recorded (when folding the log). All three views
 * are kept whatever the strategy, so a source whose component changes strategy on update
 * dedupes correctly from its first run after that.
 */
export function rememberEmit(cache: DedupeCache, id: string | number | undefined): void {
  if (id === undefined || id === null || id === '') return;
  cache.unique.push(String(id));
  if (cache.unique.length > UNIQUE_CACHE_SIZE) cache.unique.shift();
  const n = typeof id === 'number' ? id : Number(id);
  if (Number.isFinite(n) && String(id).trim() !== '' && (cache.greatest === undefined || n > cache.greatest)) cache.greatest = n;
  cache.last = String(id);
}
