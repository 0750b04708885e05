// Node's `url` for packages bundled into the sandbox: the web URL classes the guest has, plus a
// small version of the legacy `parse` / `format` / `resolve` API older packages still call.
//
// Kept hand-written rather than the `url` package (0.11.4, checked against node-shims.spec.ts): it
// has no `fileURLToPath` / `pathToFileURL`; it parses queries with `qs`, which differs from Node
// (`?a[b]=1` gives `{a: {b: '1'}}`, Node `{'a[b]': '1'}`); and it installs 24 packages, 157.0 kB
// bundled against this file's 9.0 kB (esbuild --bundle --platform=browser, unminified).
import querystring = require('./querystring.shim');

const SLASHED_PROTOCOLS = new Set(['http:', 'https:', 'ftp:', 'gopher:', 'file:', 'ws:', 'wss:']);

/** The legacy URL object of `url.parse`. */
class Url {
  protocol: string | null = null;
  slashes: boolean | null = null;
  auth: string | null = null;
  host: string | null = null;
  port: string | null = null;
  hostname: string | null = null;
  hash: string | null = null;
  search: string | null = null;
  query: string | Record<string, string | string[]> | null = null;
  pathname: string | null = null;
  path: string | null = null;
  href = '';

  format(): string {
    return format(this);
  }
}

function parse(input: string, parseQueryString = false, slashesDenoteHost = false): Url {
  if (typeof input !== 'string') throw new TypeError(`The "url" argument must be of type string. Received ${typeof input}`);
  const url = new Url();
  let rest = input.trim();
  const hashAt = rest.indexOf('#');
  if (hashAt !== -1) {
    url.hash = rest.slice(hashAt);
    rest = rest.slice(0, hashAt);
  }
  const searchAt = rest.indexOf('?');
  if (searchAt !== -1) {
    url.search = rest.slice(searchAt);
    url.query = rest.slice(searchAt + 1);
    rest = rest.slice(0, searchAt);
  }
  const protocol = /^[a-z][a-z0-9+.-]*:/i.exec(rest);
  if (protocol) {
    url.protocol = protocol[0].toLowerCase();
    rest = rest.slice(protocol[0].length);
  }
  if (rest.startsWith('//') && url.protocol !== 'javascript:' && (url.protocol !== null || slashesDenoteHost)) {
    url.slashes = true;
    rest = rest.slice(2);
  }
  // As Node's parser does, a protocol that is not one of the slashed ones (mailto:) has a host too.
  if (url.protocol !== 'javascript:' && (url.slashes || (url.protocol !== null && !SLASHED_PROTOCOLS.has(url.protocol)))) {
    const end = rest.search(/[/\\]/);
    let authority = end === -1 ? rest : rest.slice(0, end);
    rest = end === -1 ? '' : rest.slice(end);
    const at = authority.lastIndexOf('@');
    if (at !== -1) {
      url.auth = decodeURIComponent(authority.slice(0, at));
      authority = authority.slice(at + 1);
    }
    const port = /:(\d*)$/.exec(authority);
    if (port && !/^\[[^\]]*$/.test(authority.slice(0, port.index))) {
      if (port[1] !== '') url.port = port[1];
      authority = authority.slice(0, port.index);
    }
    url.hostname = authority.toLowerCase().replace(/^\[(.*)\]$/, '$1');
    url.host = authority.toLowerCase() + (url.port !== null ? `:${url.port}` : '');
  }
  url.pathname = rest !== '' ? rest : url.slashes && SLASHED_PROTOCOLS.has(url.protocol ?? '') ? '/' : null;
  if (parseQueryString) {
    url.query = querystring.parse(typeof url.query === 'string' ? url.query : '');
    if (url.search === null) url.search = '';
  }
  url.path = url.pathname === null && url.search === null ? null : `${url.pathname ?? ''}${url.search ?? ''}`;
  url.href = format(url);
  return url;
}

function format(input: unknown): string {
  if (typeof input === 'string') return parse(input).format();
  if (input instanceof URL) return input.href;
  if (input === null || typeof input !== 'object') throw new TypeError('The "urlObject" argument must be one of type object or string.');
  const parts = input as Partial<Url>;
  let protocol = parts.protocol ?? '';
  if (protocol && !protocol.endsWith(':')) protocol += ':';
  let host = '';
  if (parts.host) host = parts.host;
  else if (parts.hostname) host = (parts.hostname.includes(':') ? `[${parts.hostname}]` : parts.hostname) + (parts.port ? `:${parts.port}` : '');
  const auth = parts.auth ? `${encodeURIComponent(parts.auth).replace(/%3A/i, ':')}@` : '';
  let pathname = parts.pathname ?? '';
  const slashes = parts.slashes || SLASHED_PROTOCOLS.has(protocol) ? '//' : '';
  if ((slashes || host) && pathname && !pathname.startsWith('/')) pathname = `/${pathname}`;
  let search = parts.search ?? '';
  if (!search && parts.query && typeof parts.query === 'object') {
    const query = querystring.stringify(parts.query);
    if (query) search = `?${query}`;
  }
  if (search && !search.startsWith('?')) search = `?${search}`;
  let hash = parts.hash ?? '';
  if (hash && !hash.startsWith('#')) hash = `#${hash}`;
  return `${protocol}${slashes || host ? `${slashes}${auth}${host}` : ''}${pathname}${search.replace(/#/g, '%23')}${hash}`;
}

function resolve(from: string, to: string): string {
  // A placeholder origin lets the web URL class resolve relative references too.
  const base = new URL(from, 'resolve-base://placeholder/');
  const resolved = new URL(to, base);
  if (resolved.protocol !== 'resolve-base:') return resolved.href;
  const path = `${resolved.pathname}${resolved.search}${resolved.hash}`;
  return from.startsWith('/') || to.startsWith('/') ? path : path.slice(1);
}

function fileURLToPath(input: string | URL): string {
  const url = typeof input === 'string' ? new URL(input) : input;
  if (url.protocol !== 'file:') throw new TypeError('The URL must be of scheme file');
  return decodeURIComponent(url.pathname);
}

function pathToFileURL(path: string): URL {
  const absolute = path.startsWith('/') ? path : `/${path}`;
  return new URL(`file://${absolute.split('/').map(encodeURIComponent).join('/')}`);
}

export = {
  URL: globalThis.URL,
  URLSearchParams: globalThis.URLSearchParams,
  Url,
  parse,
  format,
  resolve,
  fileURLToPath,
  pathToFileURL,
};
