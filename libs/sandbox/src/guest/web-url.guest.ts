import { jsonParse } from './guest-intrinsics.guest';
import type { HostBindings } from './host-bindings.guest';
import { utf8Decode, utf8Encode } from './web-encoding.guest';

type Pair = [string, string];

const HEX = '0123456789ABCDEF';
const listeners = new WeakMap<URLSearchParams, (serialized: string) => void>();

function isFormSafe(byte: number): boolean {
  return (
    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) ||
    byte === 0x2a || byte === 0x2d || byte === 0x2e || byte === 0x5f
  );
}

/** application/x-www-form-urlencoded serialisation of one name or value. */
function formEncode(text: string): string {
  const bytes = utf8Encode(text);
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (isFormSafe(b)) out += String.fromCharCode(b);
    else if (b === 0x20) out += '+';
    else out += `%${HEX[b >> 4]}${HEX[b & 15]}`;
  }
  return out;
}

function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  if (code >= 0x41 && code <= 0x46) return code - 0x37;
  if (code >= 0x61 && code <= 0x66) return code - 0x57;
  return -1;
}

/** Percent-decoding that never throws: bad escapes stay as they are, bad UTF-8 becomes U+FFFD. */
function percentDecode(text: string): string {
  if (!text.includes('%')) return text;
  const source = utf8Encode(text);
  const out = new Uint8Array(source.length);
  let o = 0;
  for (let i = 0; i < source.length; i++) {
    const b = source[i];
    if (b === 0x25 && i + 2 < source.length) {
      const hi = hexValue(source[i + 1]);
      const lo = hexValue(source[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out[o++] = (hi << 4) | lo;
        i += 2;
        continue;
      }
    }
    out[o++] = b;
  }
  return utf8Decode(out.subarray(0, o), false, false).text;
}

function parseQuery(query: string): Pair[] {
  const text = query.startsWith('?') ? query.slice(1) : query;
  const list: Pair[] = [];
  for (const piece of text.split('&')) {
    if (piece === '') continue;
    const eq = piece.indexOf('=');
    const name = eq === -1 ? piece : piece.slice(0, eq);
    const value = eq === -1 ? '' : piece.slice(eq + 1);
    list.push([percentDecode(name.replace(/\+/g, ' ')), percentDecode(value.replace(/\+/g, ' '))]);
  }
  return list;
}

/** The web URLSearchParams (application/x-www-form-urlencoded lists). */
export class URLSearchParams {
  #list: Pair[] = [];

  constructor(init?: unknown) {
    if (init === undefined) return;
    if (init instanceof URLSearchParams) {
      this.#list = init.#list.map(([n, v]): Pair => [n, v]);
    } else if (init !== null && (typeof init === 'object' || typeof init === 'function')) {
      const iterator = (init as { [Symbol.iterator]?: unknown })[Symbol.iterator];
      if (typeof iterator === 'function') {
        for (const pair of init as Iterable<unknown>) {
          const items = [...(pair as Iterable<unknown>)];
          if (items.length !== 2) throw new TypeError('Each query pair must be an iterable [name, value] tuple');
          this.#list.push([String(items[0]), String(items[1])]);
        }
      } else {
        for (const key of Object.keys(init)) this.#list.push([key, String((init as Record<string, unknown>)[key])]);
      }
    } else {
      this.#list = parseQuery(String(init));
    }
  }

  /** @internal Replaces the list from a URL's query without notifying the URL back. */
  static _reset(params: URLSearchParams, query: string): void {
    params.#list = parseQuery(query);
  }

  /** @internal Links the list to a URL so that changes update its `search`. */
  static _link(params: URLSearchParams, onChange: (serialized: string) => void): void {
    listeners.set(params, onChange);
  }

  #changed(): void {
    listeners.get(this)?.(this.toString());
  }

  get size(): number {
    return this.#list.length;
  }

  append(name: unknown, value: unknown): void {
    this.#list.push([String(name), String(value)]);
    this.#changed();
  }

  delete(name: unknown, value?: unknown): void {
    const n = String(name);
    const v = value === undefined ? undefined : String(value);
    this.#list = this.#list.filter(([k, val]) => !(k === n && (v === undefined || val === v)));
    this.#changed();
  }

  get(name: unknown): string | null {
    const n = String(name);
    const found = this.#list.find(([k]) => k === n);
    return found ? found[1] : null;
  }

  getAll(name: unknown): string[] {
    const n = String(name);
    return this.#list.filter(([k]) => k === n).map(([, v]) => v);
  }

  has(name: unknown, value?: unknown): boolean {
    const n = String(name);
    const v = value === undefined ? undefined : String(value);
    return this.#list.some(([k, val]) => k === n && (v === undefined || val === v));
  }

  set(name: unknown, value: unknown): void {
    const n = String(name);
    const v = String(value);
    const index = this.#list.findIndex(([k]) => k === n);
    if (index === -1) this.#list.push([n, v]);
    else {
      this.#list[index][1] = v;
      this.#list = this.#list.filter(([k], i) => i <= index || k !== n);
    }
    this.#changed();
  }

  sort(): void {
    // Array.prototype.sort is stable, as the standard requires; names compare by code units.
    this.#list.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    this.#changed();
  }

  forEach(callback: (value: string, name: string, params: URLSearchParams) => void, thisArg?: unknown): void {
    for (const [n, v] of [...this.#list]) callback.call(thisArg, v, n, this);
  }

  *entries(): IterableIterator<Pair> {
    for (const [n, v] of this.#list) yield [n, v];
  }

  *keys(): IterableIterator<string> {
    for (const [n] of this.#list) yield n;
  }

  *values(): IterableIterator<string> {
    for (const [, v] of this.#list) yield v;
  }

  [Symbol.iterator](): IterableIterator<Pair> {
    return this.entries();
  }

  toString(): string {
    return this.#list.map(([n, v]) => `${formEncode(n)}=${formEncode(v)}`).join('&');
  }
}

/** Order of the parts the host returns for a parsed URL. */
const PARTS = ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'] as const;
type Part = (typeof PARTS)[number];
const SETTABLE = new Set<string>(['protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash']);

/** The web URL, parsed by the host's WHATWG parser so that every edge case matches Node's. */
export interface UrlClass {
  new (url: unknown, base?: unknown): UrlInstance;
  canParse(url: unknown, base?: unknown): boolean;
  parse(url: unknown, base?: unknown): UrlInstance | null;
}

/** An instance of the guest URL class. */
export interface UrlInstance extends Record<Part, string> {
  readonly searchParams: URLSearchParams;
  toString(): string;
  toJSON(): string;
}

/** Builds the URL class over the host's parser. */
export function createUrlClass(host: Pick<HostBindings, 'urlParse' | 'urlSet'>): UrlClass {
  const parse = (url: unknown, base: unknown): string[] | null => {
    const json = host.urlParse(String(url), base === undefined ? undefined : String(base));
    return json ? (jsonParse(json) as string[]) : null;
  };

  class URL {
    #parts: string[];
    #params: URLSearchParams | null = null;

    constructor(url: unknown, base?: unknown) {
      const parts = parse(url, base);
      if (!parts) throw new TypeError(`Invalid URL: ${String(url)}`);
      this.#parts = parts;
    }

    static canParse(url: unknown, base?: unknown): boolean {
      return parse(url, base) !== null;
    }

    static parse(url: unknown, base?: unknown): URL | null {
      return parse(url, base) ? new URL(url, base) : null;
    }

    #get(part: Part): string {
      return this.#parts[PARTS.indexOf(part)];
    }

    #set(part: string, value: unknown): void {
      if (!SETTABLE.has(part)) return;
      this.#parts = jsonParse(host.urlSet(this.#parts[0], part, String(value))) as string[];
      if (this.#params) URLSearchParams._reset(this.#params, this.#get('search'));
    }

    get href(): string {
      return this.#parts[0];
    }

    set href(value: string) {
      const parts = parse(value, undefined);
      if (!parts) throw new TypeError(`Invalid URL: ${String(value)}`);
      this.#parts = parts;
      if (this.#params) URLSearchParams._reset(this.#params, this.#get('search'));
    }

    get origin(): string { return this.#get('origin'); }
    get protocol(): string { return this.#get('protocol'); }
    set protocol(v: string) { this.#set('protocol', v); }
    get username(): string { return this.#get('username'); }
    set username(v: string) { this.#set('username', v); }
    get password(): string { return this.#get('password'); }
    set password(v: string) { this.#set('password', v); }
    get host(): string { return this.#get('host'); }
    set host(v: string) { this.#set('host', v); }
    get hostname(): string { return this.#get('hostname'); }
    set hostname(v: string) { this.#set('hostname', v); }
    get port(): string { return this.#get('port'); }
    set port(v: string) { this.#set('port', v); }
    get pathname(): string { return this.#get('pathname'); }
    set pathname(v: string) { this.#set('pathname', v); }
    get search(): string { return this.#get('search'); }
    set search(v: string) { this.#set('search', v); }
    get hash(): string { return this.#get('hash'); }
    set hash(v: string) { this.#set('hash', v); }

    get searchParams(): URLSearchParams {
      if (!this.#params) {
        const params = new URLSearchParams(this.#get('search'));
        URLSearchParams._link(params, (serialized) => {
          this.#parts = jsonParse(host.urlSet(this.#parts[0], 'search', serialized)) as string[];
        });
        this.#params = params;
      }
      return this.#params;
    }

    toString(): string {
      return this.#parts[0];
    }

    toJSON(): string {
      return this.#parts[0];
    }
  }
  return URL as unknown as UrlClass;
}
