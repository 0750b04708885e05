import { builtinModules } from 'node:module';

/** A bare import split into its parts: `@scope/pkg@^1.2.0/sub/path`. */
export interface PackageSpecifier {
  /** The npm name, `@scope/pkg` or `pkg`. */
  name: string;
  /** The version, range or dist-tag written after `@`; null when none was written (latest). */
  range: string | null;
  /** `''` or a path inside the package starting with `/`. */
  subpath: string;
}

/** What an import string in component code asks for. */
export type ImportRequest =
  | { kind: 'relative' }
  | { kind: 'url' }
  | { kind: 'builtin'; module: string }
  | { kind: 'package'; specifier: PackageSpecifier }
  | { kind: 'invalid'; reason: string };

// npm's rules for new package names: lowercase URL-safe characters, no leading dot or underscore.
const NAME_PART = /^[a-z0-9~-][a-z0-9._~-]*$/;
const MAX_NAME_LENGTH = 214;
// Versions, ranges (`^1.2.0`, `~4.17`, `>=1 <2`, `1.x || 2.x`) and dist-tags; nothing a shell or
// npm's option parser could read as more than one argument.
const RANGE = /^[0-9A-Za-z.^~<>=*|+ -]{1,64}$/;
const BUILTINS = new Set(builtinModules);

/**
 * Splits a bare specifier; null when it is not a valid npm name (with an optional `@range` after
 * the name and an optional subpath).
 */
export function parsePackageSpecifier(specifier: string): PackageSpecifier | null {
  const scoped = specifier.startsWith('@');
  const firstSlash = specifier.indexOf('/');
  if (scoped && firstSlash === -1) return null;
  const nameEnd = specifier.indexOf('/', scoped ? firstSlash + 1 : 0);
  const head = nameEnd === -1 ? specifier : specifier.slice(0, nameEnd);
  const subpath = nameEnd === -1 ? '' : specifier.slice(nameEnd);
  const at = head.indexOf('@', scoped ? 1 : 0);
  const name = at === -1 ? head : head.slice(0, at);
  const range = at === -1 ? null : head.slice(at + 1).trim();
  const parts = scoped ? [name.slice(1, name.indexOf('/')), name.slice(name.indexOf('/') + 1)] : [name];
  if (name.length > MAX_NAME_LENGTH || !parts.every((part) => NAME_PART.test(part))) return null;
  if (range !== null && !RANGE.test(range)) return null;
  // A subpath names a file inside the package: never a way out of it.
  if (subpath !== '' && (subpath === '/' || subpath.includes('\\') || subpath.split('/').slice(1).some((s) => s === '' || s === '.' || s === '..'))) {
    return null;
  }
  return { name, range, subpath };
}

/** True for `fs`, `node:fs`, `fs/promises`...: what Node itself would load for that import string. */
export function isNodeBuiltin(specifier: string): boolean {
  return specifier.startsWith('node:') || BUILTINS.has(specifier);
}

/**
 * Classifies an import string of component code. A built-in name without a version is the
 * built-in (Node gives built-ins precedence too); with a version (`events@3.3.0`) it is the npm
 * package of that name.
 */
export function classifyImport(path: string): ImportRequest {
  if (path.startsWith('.') || path.startsWith('/')) return { kind: 'relative' };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(path)) return { kind: 'url' };
  if (isNodeBuiltin(path)) return { kind: 'builtin', module: path.replace(/^node:/, '') };
  const specifier = parsePackageSpecifier(path);
  if (!specifier) return { kind: 'invalid', reason: `"${path}" is not a valid package name (with an optional @version and subpath)` };
  return { kind: 'package', specifier };
}

/** `name` or `name@range`, as messages and npm's command line write it. */
export function packageLabel(name: string, range: string | null | undefined): string {
  return range ? `${name}@${range}` : name;
}
