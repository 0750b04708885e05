const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
// JSON text can spell a key with escapes ("__proto\u005f_"), so any escape sends the text down the slow path.
const SUSPICIOUS = /__proto__|constructor|prototype|\\u/;

function dropForbidden(this: unknown, key: string, value: unknown): unknown {
  return FORBIDDEN_KEYS.has(key) ? undefined : value;
}

/**
 * Parses JSON produced in the guest. Keys `__proto__`, `constructor` and `prototype` are dropped
 * at every depth, so guest data merged into host objects later cannot pollute prototypes.
 */
export function parseGuestJson(text: string): unknown {
  return SUSPICIOUS.test(text) ? JSON.parse(text, dropForbidden) : JSON.parse(text);
}
