import { randomBytes, randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random bytes drawn from for ids: one `randomBytes` call per 1,024 bytes, not one per id (about 20 us each, per a profile of the workflows bench). */
const pool = Buffer.alloc(1024);
let poolOffset = pool.length;

/**
 * `n` characters of {@link ALPHABET}, each uniformly random: a byte of 248 or more (62 x 4) is
 * skipped, so no character is likelier than another.
 */
function randomChars(n: number): string {
  let out = '';
  while (out.length < n) {
    if (poolOffset === pool.length) {
      randomFillSync(pool);
      poolOffset = 0;
    }
    const b = pool[poolOffset++];
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}

/** A random, URL-safe, unguessable id with the given prefix (about 131 bits of entropy). */
export function newId(prefix: 'u' | 'wh' | 'sub' | 'sc' | 'dc' | 'p' | 'apn' | 'key' | 'dl' | 'run' | 'req'): string {
  return `${prefix}_${randomChars(22)}`;
}

/** Characters of a run id's time: 62^8 ms reach the year 8,900. */
const RUN_TIME_CHARS = 8;

/**
 * A new workflow run's id: `run_` and 22 URL-safe characters, as {@link newId} makes them, whose
 * first 8 are the Unix millisecond `now` in base 62 (most significant first, so ids sort by time
 * in SQLite's byte order) and the other 14 random (about 83 bits). A run's stream and its rows are
 * keyed by this id: ids made one after the other land on the last pages of those indexes, where
 * random ids each touched a page of their own anywhere in them (and, once the log outgrew the
 * page cache, read it back first).
 */
export function newRunId(now = Date.now()): string {
  let t = Math.max(0, Math.floor(now));
  let time = '';
  for (let i = 0; i < RUN_TIME_CHARS; i++) {
    time = ALPHABET[t % 62] + time;
    t = Math.floor(t / 62);
  }
  return `run_${time}${randomChars(22 - RUN_TIME_CHARS)}`;
}

/** A random URL-safe token (for endpoint keys and API keys). */
export function randomToken(bytes = 24): string {
  return randomBytes(bytes).toString('base64url');
}

/** Converts a component name to a slug: lower-case words joined by dashes. */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return slug || 'source';
}

/** The first free slug in `taken`: `base`, then `base-1`, `base-2`, ... */
export function uniqueSlug(base: string, taken: (slug: string) => boolean): string {
  if (!taken(base)) return base;
  for (let i = 1; ; i++) if (!taken(`${base}-${i}`)) return `${base}-${i}`;
}
