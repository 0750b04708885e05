import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A random, URL-safe, unguessable id with the given prefix (about 131 bits of entropy). */
export function newId(prefix: 'u' | 'wh' | 'sub' | 'sc' | 'dc' | 'p' | 'apn' | 'key' | 'dl' | 'run' | 'req'): string {
  const bytes = randomBytes(22);
  let out = '';
  for (const b of bytes) out += ALPHABET[b % 62];
  return `${prefix}_${out}`;
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
