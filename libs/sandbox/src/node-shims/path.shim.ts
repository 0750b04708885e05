// Node's `path` (POSIX flavour) for packages bundled into the sandbox. There is no file system or
// working directory there: `resolve` works from `/`.

interface ParsedPath {
  root: string;
  dir: string;
  base: string;
  ext: string;
  name: string;
}

function checkString(value: unknown, name: string): asserts value is string {
  if (typeof value !== 'string') throw new TypeError(`The "${name}" argument must be of type string. Received ${typeof value}`);
}

/** Resolves `.` and `..` segments; `..` past the start is kept only for relative paths. */
function normalizeSegments(path: string, allowAboveRoot: boolean): string {
  const out: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (allowAboveRoot) out.push('..');
    } else out.push(segment);
  }
  return out.join('/');
}

function normalize(path: string): string {
  checkString(path, 'path');
  if (path === '') return '.';
  const absolute = path.startsWith('/');
  const trailing = path.endsWith('/');
  let out = normalizeSegments(path, !absolute);
  if (out === '' && !absolute) out = '.';
  if (out !== '' && trailing) out += '/';
  return absolute ? `/${out}` : out;
}

function join(...parts: string[]): string {
  for (const part of parts) checkString(part, 'path');
  const joined = parts.filter((p) => p !== '').join('/');
  return joined === '' ? '.' : normalize(joined);
}

function resolve(...parts: string[]): string {
  let resolved = '';
  for (let i = parts.length - 1; i >= 0; i--) {
    const part = parts[i];
    checkString(part, 'path');
    if (part === '') continue;
    resolved = `${part}/${resolved}`;
    if (part.startsWith('/')) break;
  }
  return `/${normalizeSegments(resolved, false)}`;
}

function isAbsolute(path: string): boolean {
  checkString(path, 'path');
  return path.startsWith('/');
}

function relative(from: string, to: string): string {
  const a = resolve(from).split('/').filter(Boolean);
  const b = resolve(to).split('/').filter(Boolean);
  let common = 0;
  while (common < a.length && common < b.length && a[common] === b[common]) common++;
  return [...a.slice(common).map(() => '..'), ...b.slice(common)].join('/');
}

function dirname(path: string): string {
  checkString(path, 'path');
  if (path === '') return '.';
  let end = path.length;
  while (end > 1 && path[end - 1] === '/') end--;
  const slash = path.lastIndexOf('/', end - 1);
  if (slash === -1) return '.';
  return slash === 0 ? '/' : path.slice(0, slash);
}

function basename(path: string, suffix?: string): string {
  checkString(path, 'path');
  let end = path.length;
  while (end > 0 && path[end - 1] === '/') end--;
  const base = path.slice(path.lastIndexOf('/', end - 1) + 1, end);
  return suffix !== undefined && suffix !== base && base.endsWith(suffix) ? base.slice(0, base.length - suffix.length) : base;
}

function extname(path: string): string {
  const base = basename(path);
  const dot = base.lastIndexOf('.');
  // A leading dot starts a hidden file's name, not an extension (`.profile`); `..` has none either.
  if (dot <= 0 || base === '..') return '';
  return base.slice(dot);
}

function parse(path: string): ParsedPath {
  checkString(path, 'path');
  const root = path.startsWith('/') ? '/' : '';
  const base = basename(path);
  const ext = extname(path);
  let end = path.length;
  while (end > 1 && path[end - 1] === '/') end--;
  const dir = base === '' ? root : path.lastIndexOf('/', end - 1) === -1 ? '' : dirname(path);
  return { root, dir, base, ext, name: ext ? base.slice(0, base.length - ext.length) : base };
}

function format(parts: Partial<ParsedPath>): string {
  const dir = parts.dir || parts.root || '';
  const base = parts.base || `${parts.name ?? ''}${parts.ext ? (parts.ext.startsWith('.') ? '' : '.') + parts.ext : ''}`;
  if (!dir) return base;
  return dir === parts.root ? `${dir}${base}` : `${dir}/${base}`;
}

const path = {
  sep: '/',
  delimiter: ':',
  normalize,
  join,
  resolve,
  isAbsolute,
  relative,
  dirname,
  basename,
  extname,
  parse,
  format,
  toNamespacedPath: (p: string): string => p,
  posix: undefined as unknown,
};
path.posix = path;

export = path;
