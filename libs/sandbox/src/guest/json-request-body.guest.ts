import { jsonParse, jsonStringify } from './guest-intrinsics.guest';

/** Keys a JSON body's parse drops, or `\u` escapes that could spell them. */
const RISKY_KEYS = /__proto__|constructor|prototype|\\u/;

const dropRiskyKeys = (key: string, value: unknown): unknown =>
  key === '__proto__' || key === 'constructor' || key === 'prototype' ? undefined : value;

/**
 * `JSON.parse` that drops `__proto__`, `constructor` and `prototype` keys at every depth, so data
 * merged into other objects later cannot pollute prototypes. A reviver costs a call per key and
 * value, so it runs only for text that could hold such a key: one that names it, or has any `\u`
 * escape (which could spell it). The parse of guest results (`parseGuestJson`) and of the API's
 * JSON (`safeJsonParse`) is this one too.
 */
export function parseDroppingRiskyKeys(text: string): unknown {
  return RISKY_KEYS.test(text) ? jsonParse(text, dropRiskyKeys) : jsonParse(text);
}

/**
 * A number token whose value could be past a double (an exponent of three digits, a run of 100
 * digits: `1e400`, `[0-9]{309}`, 300 digits then `e99`) or underflow to negative zero (`-1e-400`).
 * Text in strings may match (a hash, a long number in a string): that only costs a round trip.
 */
const NUMBER_PAST_DOUBLE = /[0-9][eE][-+]?[0-9]{3}|[0-9]{100}/;

/** Whether a number token starts with `-0` (after `:`, `[`, `,` or at the start): `-0`, `-0.0`, `-0e5`. */
function negativeZeroToken(text: string): boolean {
  for (let i = text.indexOf('-0'); i !== -1; i = text.indexOf('-0', i + 2)) {
    let j = i - 1;
    while (j >= 0) {
      const c = text.charCodeAt(j);
      if (c !== 32 && c !== 9 && c !== 10 && c !== 13) break;
      j--;
    }
    if (j < 0) return true;
    const before = text.charCodeAt(j);
    if (before === 58 || before === 91 || before === 44) return true; // : [ ,
  }
  return false;
}

/**
 * The `body` of an HTTP request with a JSON content type, from its raw text: what a run has
 * always seen, the server's parse (dropping `__proto__`, `constructor` and `prototype` keys at
 * every depth) as it reads after a JSON round trip (`-0` is `0`, a number past a double is
 * `null`), or the raw text itself when it is not JSON. Made where the body is needed: in the
 * guest just before the run (`SandboxInvocation.bodyFromRaw`), and by a recovery reading the
 * request's record; the server never parses such a body (docs/architecture.md, "Large bodies").
 * The round trip is made only for text that may hold such a number. Never throws.
 */
export function jsonRequestBody(raw: string): unknown {
  let body: unknown;
  try {
    body = parseDroppingRiskyKeys(raw);
  } catch {
    return raw;
  }
  if ((typeof body === 'object' || typeof body === 'number') && (NUMBER_PAST_DOUBLE.test(raw) || negativeZeroToken(raw))) {
    try {
      body = jsonParse(jsonStringify(body) ?? 'null');
    } catch {
      // Nested deeper than serialising can go (JSON.parse is not recursive, JSON.stringify is):
      // the parse as it is, rather than a throw where a run or a recovery needs its event.
    }
  }
  return body;
}
