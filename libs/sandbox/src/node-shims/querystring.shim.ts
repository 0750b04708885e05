// Node's `querystring` for packages bundled into the sandbox.
//
// Kept hand-written rather than `querystring-es3` (0.2.1, checked against node-shims.spec.ts): it
// throws URIError on a malformed escape where Node keeps the text (`bad=%E0%A4%A`), and it has no
// `escape` / `unescape`.

type ParsedQuery = Record<string, string | string[]>;
interface ParseOptions {
  maxKeys?: number;
  decodeURIComponent?: (text: string) => string;
}
interface StringifyOptions {
  encodeURIComponent?: (text: string) => string;
}

function escape(text: unknown): string {
  return encodeURIComponent(typeof text === 'string' ? text : String(text));
}

/** Percent-decoding that, like Node's, keeps malformed escapes as they are instead of throwing. */
function unescape(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    const bytes: number[] = [];
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code === 37 && /^[0-9a-fA-F]{2}$/.test(text.slice(i + 1, i + 3))) {
        bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
        i += 2;
      } else if (code < 0x80) bytes.push(code);
      else bytes.push(...new TextEncoder().encode(text[i]));
    }
    return new TextDecoder().decode(new Uint8Array(bytes));
  }
}

function parse(text: unknown, sep = '&', eq = '=', options: ParseOptions = {}): ParsedQuery {
  const out = Object.create(null) as ParsedQuery;
  if (typeof text !== 'string' || text.length === 0) return out;
  const decode = options.decodeURIComponent ?? unescape;
  const maxKeys = options.maxKeys ?? 1000;
  let pairs = text.split(sep || '&');
  if (maxKeys > 0) pairs = pairs.slice(0, maxKeys);
  for (const pair of pairs) {
    if (pair === '') continue;
    const at = pair.indexOf(eq || '=');
    const rawKey = at === -1 ? pair : pair.slice(0, at);
    const rawValue = at === -1 ? '' : pair.slice(at + (eq || '=').length);
    const key = decode(rawKey.replace(/\+/g, ' '));
    const value = decode(rawValue.replace(/\+/g, ' '));
    const existing = out[key];
    if (existing === undefined) out[key] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else out[key] = [existing, value];
  }
  return out;
}

function primitive(value: unknown): string {
  if (typeof value === 'string') return value;
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return '';
}

function stringify(object: unknown, sep = '&', eq = '=', options: StringifyOptions = {}): string {
  if (object === null || typeof object !== 'object') return '';
  const encode = options.encodeURIComponent ?? escape;
  const parts: string[] = [];
  for (const key of Object.keys(object)) {
    const value = (object as Record<string, unknown>)[key];
    const prefix = `${encode(primitive(key))}${eq}`;
    if (Array.isArray(value)) for (const item of value) parts.push(prefix + encode(primitive(item)));
    else parts.push(prefix + encode(primitive(value)));
  }
  return parts.join(sep);
}

export = { parse, stringify, escape, unescape, decode: parse, encode: stringify };
