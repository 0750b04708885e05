import { createHash } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative } from 'node:path';
import type { Message, OnResolveArgs, OnResolveResult, Plugin, PluginBuild } from 'esbuild';
import { build, transform } from './esbuild.loader';
import { ComponentCodeError } from './component-code.error';
import type { PackageCache } from './package-cache';
import { classifyImport, isNodeBuiltin, packageLabel } from './package-specifier.parser';

/** Name of the global var the bundle assigns its exports to (the worker reads it back). */
export const COMPONENT_GLOBAL = '__sluiceComponent';

/** A component compiled for the sandbox. */
export interface BundledComponent {
  /** A self-contained script; evaluated, it leaves the component's exports in `var __sluiceComponent`. */
  bundle: string;
  /** sha256 (hex) of the original code: the same code always gives the same hash. */
  codeHash: string;
  /** The packages the component imports, name -> the exact version bundled. */
  packages: Record<string, string>;
}

/** How to bundle a component. */
export interface BundleOptions {
  /** Decides the loader (`.ts` compiles TypeScript) and names the code in error messages. */
  filename?: string;
  /** Where bare package imports are installed from the npm registry; without it they are refused. */
  packageCache?: PackageCache;
}

/** The package a bare specifier names: `lodash/get` -> `lodash`, `@scope/pkg@1.2/x` -> `@scope/pkg`. */
export function packageNameOf(specifier: string): string {
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
  const at = name.indexOf('@', 1);
  return at === -1 ? name : name.slice(0, at);
}

/**
 * Packages the sandbox provides itself instead of installing them. `@pipedream/types` is a types
 * package whose only runtime code is `defineSource` / `defineAction` / `defineApp` returning their
 * argument; installing it would pull in the TypeScript compiler (its dependency) for nothing.
 */
const PROVIDED_PACKAGES: Record<string, string> = {
  '@pipedream/types': `function same(definition) { return definition; }
module.exports = { defineApp: same, defineSource: same, defineAction: same, definePropDefinition: same, defineComponent: same };`,
};

/** One package import of the component's code, once its version is settled and installed. */
type PreparedImport = { name: string; version: string; installDir: string } | { error: string };

/** Per-bundle state shared by the plugin's callbacks. */
interface BundleContext {
  cache: PackageCache | undefined;
  prepared: Map<string, PreparedImport>;
  /** A failure that is not the code's fault (disk, npm missing): rethrown as is, never a 400. */
  infrastructureError: unknown;
}

// Our own modules: the Node shims and the guest formatter they reuse. Source `.ts` files under
// ts-node/jest, compiled `.js` files when running from dist.
const SANDBOX_SOURCE_DIR = __dirname;
const SHIM_DIR = join(__dirname, 'node-shims');
const VIRTUAL = 'sluice-node';
/** Import prefix our generated code uses to reach a shim whatever the importing package has installed. */
const SHIM_PREFIX = 'sluice-node:';
/**
 * Injected into bundles whose code mentions `Buffer` or `process`: the Node globals component code
 * uses without importing (registry components call `Buffer.from` and read `process.env`). esbuild
 * binds each free `Buffer` / `process` to this module's exports; bundles that never mention them
 * stay without the shims. Packages get the same modules, so `Buffer.isBuffer` agrees between a
 * component and its packages.
 */
const GLOBALS_INJECT = `${SHIM_PREFIX}component-globals`;
/** Marks `build.resolve` calls we make ourselves, so our onResolve lets esbuild answer them. */
const DIRECT = { sluiceDirect: true };
const SHIMS: Record<string, string> = {
  buffer: 'buffer',
  events: 'events',
  util: 'util',
  path: 'path',
  'path/posix': 'path',
  url: 'url',
  querystring: 'querystring',
  crypto: 'crypto',
  process: 'process',
  timers: 'timers',
  stream: 'stream',
  'stream/promises': 'stream-promises',
  string_decoder: 'string_decoder',
  zlib: 'zlib',
  assert: 'assert',
  'assert/strict': 'assert',
  http: 'http',
  https: 'https',
};

/**
 * Shims whose body is an npm polyfill written for browsers (readable-stream, string_decoder,
 * browserify-zlib): each is bundled once, on its own, with browser resolution (their package.json
 * `browser` fields pick the variants that do not `require('stream')` back), and then stands in
 * for the module in every component bundle. Node built-ins they import stay imports of the shared
 * shims, so one Buffer, one EventEmitter and one `stream` serve a component and all its packages.
 */
const PREBUILT_SHIMS = new Set(['stream', 'string_decoder', 'zlib-impl']);
const prebuiltSources = new Map<string, Promise<string>>();

/**
 * npm polyfills some shims re-export (see node-shims/*.shim.ts). Their files are bundled like an
 * installed package's: their own imports resolve from their directory, and their Node globals
 * (path-browserify calls `process.cwd()`) are renamed to the shims.
 */
const POLYFILL_PACKAGES = ['events', 'path-browserify'];
let polyfillDirs: string[] | null = null;

function isPolyfillFile(path: string): boolean {
  polyfillDirs ??= POLYFILL_PACKAGES.map((name) => realpathSync(dirname(require.resolve(`${name}/package.json`))));
  return polyfillDirs.some((dir) => isInside(dir, path));
}

// Node globals that package code uses freely. In package files they are renamed to locals bound
// to the shims; the component's own code gets `Buffer` and `process` by injection (GLOBALS_INJECT).
const PACKAGE_GLOBALS = [
  { local: '__sluiceBuffer', init: `require("${SHIM_PREFIX}buffer").Buffer` },
  { local: '__sluiceProcess', init: `require("${SHIM_PREFIX}process")` },
  { local: '__sluiceSetImmediate', init: `require("${SHIM_PREFIX}timers").setImmediate` },
  { local: '__sluiceClearImmediate', init: `require("${SHIM_PREFIX}timers").clearImmediate` },
];
const PACKAGE_DEFINES: Record<string, string> = {
  'process.env.NODE_ENV': '"production"',
  Buffer: '__sluiceBuffer',
  process: '__sluiceProcess',
  setImmediate: '__sluiceSetImmediate',
  clearImmediate: '__sluiceClearImmediate',
  global: 'globalThis',
  __dirname: '"/"',
  __filename: '"/index.js"',
};
const MENTIONS_COMPONENT_GLOBAL = /\b(?:Buffer|process)\b/;
const MENTIONS_NODE_GLOBAL = /\b(?:Buffer|process|global|setImmediate|clearImmediate|__dirname|__filename)\b/;
// esbuild prints directives one per line at the top (after a hashbang): our `var`s go after them
// so "use strict" keeps its meaning.
const DIRECTIVE_PROLOGUE = /^(?:#![^\n]*\n)?(?:(?:"[^"\\\n]*"|'[^'\\\n]*');?[ \t]*\n)*/;
// Installed package files never change, so their rewritten text is kept across bundles.
const MAX_CACHED_SOURCE_CHARS = 32 * 1024 * 1024;
const rewrittenSources = new Map<string, string>();
let rewrittenChars = 0;
const builtinExportNames = new Map<string, string[]>();
// Loading these just to list their functions would print experimental warnings.
const UNLISTED_BUILTINS = new Set(['wasi', 'sqlite', 'test', 'test/reporters', 'sea', 'trace_events']);

let shimExtension: string | null = null;

function shimPath(name: string): string {
  shimExtension ??= existsSync(join(SHIM_DIR, 'buffer.shim.js')) ? '.js' : '.ts';
  return join(SHIM_DIR, `${name}.shim${shimExtension}`);
}

function isInside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

function refuse(text: string): OnResolveResult {
  return { errors: [{ text }] };
}

/** Where an import of shim `name` goes: its file, or the prebuilt module standing for it. */
function shimResult(name: string): OnResolveResult {
  if (PREBUILT_SHIMS.has(name)) return { path: `prebuilt:${name}`, namespace: VIRTUAL, sideEffects: false };
  return { path: shimPath(name), sideEffects: false };
}

/** The Node built-in a polyfill imports, when a shared shim stands for it (see PREBUILT_SHIMS). */
function sharedShimOf(path: string): string | null {
  const bare = path.startsWith('node:') ? path.slice('node:'.length) : path.replace(/\/$/, '');
  return SHIMS[bare] ?? null;
}

async function buildPrebuilt(name: string): Promise<string> {
  const result = await build({
    entryPoints: [shimPath(name)],
    bundle: true,
    write: false,
    format: 'cjs',
    platform: 'browser',
    target: 'es2022',
    charset: 'ascii',
    legalComments: 'none',
    keepNames: true,
    logLevel: 'silent',
    define: PACKAGE_DEFINES,
    banner: { js: PACKAGE_GLOBALS.map((g) => `var ${g.local} = ${g.init};`).join('\n') },
    plugins: [{
      name: 'sluice-prebuilt-shim',
      setup(pluginBuild) {
        pluginBuild.onResolve({ filter: /.*/ }, (args) => {
          if (args.path.startsWith(SHIM_PREFIX)) return { path: args.path, external: true };
          if (args.kind === 'entry-point') return undefined;
          const shared = sharedShimOf(args.path);
          // string_decoder is shared too (readable-stream imports it as a package), but a shim's own
          // package stays inside its build.
          if (shared && shared !== name && (isNodeBuiltin(args.path) || shared === 'string_decoder')) return { path: `${SHIM_PREFIX}${shared}`, external: true };
          return undefined;
        });
      },
    }],
  });
  return result.outputFiles[0].text;
}

/** The prebuilt module of shim `name`, built once per process (the same bytes for every bundle). */
function prebuiltSource(name: string): Promise<string> {
  let source = prebuiltSources.get(name);
  if (!source) {
    source = buildPrebuilt(name);
    source.catch(() => prebuiltSources.delete(name));
    prebuiltSources.set(name, source);
  }
  return source;
}

function resolveBuiltin(module: string): OnResolveResult {
  const shim = SHIMS[module];
  if (shim) return shimResult(shim);
  return { path: `unavailable:${module}`, namespace: VIRTUAL, sideEffects: false };
}

/** The real module's export names, so `import { readFileSync } from "fs"` binds to a stub. */
function exportNamesOf(module: string): string[] {
  let names = builtinExportNames.get(module);
  if (!names) {
    names = [];
    if (!UNLISTED_BUILTINS.has(module)) {
      try {
        const real = process.getBuiltinModule(module) as Record<string, unknown> | undefined;
        if (real) names = Object.keys(real).filter((key) => /^[A-Za-z_$][\w$]*$/.test(key));
      } catch {
        // Not a module this Node has: every property still throws through the stub's proxy.
      }
    }
    builtinExportNames.set(module, names);
  }
  return names;
}

async function loadVirtual(path: string): Promise<{ contents: string; loader: 'js' }> {
  const colon = path.indexOf(':');
  const kind = path.slice(0, colon);
  const subject = path.slice(colon + 1);
  if (kind === 'prebuilt') return { contents: await prebuiltSource(subject), loader: 'js' };
  if (kind === 'unavailable') {
    const module = JSON.stringify(subject);
    return { contents: `module.exports = require("${SHIM_PREFIX}unavailable")(${module}, ${JSON.stringify(exportNamesOf(subject))});`, loader: 'js' };
  }
  // A require, not an ESM re-export: the shims are CommonJS and get this module injected too, and a
  // static import would make the buffer shim's first line wait for itself.
  // Buffer is also defined on globalThis (as in Node), for code that reads `globalThis.Buffer`;
  // `process` is bound only where the code names it, so the global stays without one.
  if (kind === 'globals') {
    return {
      contents: `var B = require("${SHIM_PREFIX}buffer").Buffer;
var P = require("${SHIM_PREFIX}process");
if (typeof globalThis.Buffer === "undefined") Object.defineProperty(globalThis, "Buffer", { value: B, writable: true, configurable: true, enumerable: false });
export { B as Buffer, P as process };`,
      loader: 'js',
    };
  }
  if (kind === 'provided') return { contents: PROVIDED_PACKAGES[subject], loader: 'js' };
  if (kind === 'missing') {
    // Thrown when required, as Node would: packages probing optional dependencies in a try/catch
    // keep working, and a package that truly needs it fails when the component loads at save.
    return { contents: `throw new Error(${JSON.stringify(`Cannot find module "${subject}"`)});`, loader: 'js' };
  }
  // A module a package's "browser" field disables (`"fs": false`) is an empty object, as in esbuild.
  return { contents: 'module.exports = {};', loader: 'js' };
}

/** Collects every import string of the component's own code (a parse-only pass: nothing is bundled). */
async function importsOf(code: string, loader: 'ts' | 'js', filename: string): Promise<string[]> {
  const found = new Set<string>();
  await build({
    stdin: { contents: code, loader, sourcefile: filename },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    logLevel: 'silent',
    plugins: [{
      name: 'sluice-import-scan',
      setup(pluginBuild) {
        pluginBuild.onResolve({ filter: /.*/ }, (args) => {
          found.add(args.path);
          return { path: args.path, external: true };
        });
      },
    }],
  });
  return [...found];
}

/**
 * Settles one version per imported package and installs it. An import without a version follows
 * the version written in another import of the same package (`lodash@4.17.21` and `lodash/get`);
 * with none written anywhere it is the latest. Two written ranges that settle on different
 * versions are the author's mistake.
 */
async function preparePackages(paths: string[], cache: PackageCache): Promise<Map<string, PreparedImport>> {
  const groups = new Map<string, { ranges: Set<string>; paths: string[] }>();
  for (const path of paths) {
    const request = classifyImport(path);
    if (request.kind !== 'package') continue;
    const { name, range } = request.specifier;
    if (PROVIDED_PACKAGES[name] !== undefined) continue;
    const group = groups.get(name) ?? { ranges: new Set<string>(), paths: [] };
    if (range) group.ranges.add(range);
    group.paths.push(path);
    groups.set(name, group);
  }
  const prepared = new Map<string, PreparedImport>();
  await Promise.all([...groups].map(async ([name, group]) => {
    let outcome: PreparedImport;
    try {
      const ranges = [...group.ranges];
      const versions = ranges.length === 0 ? [await cache.resolve(name, '')] : await Promise.all(ranges.map((range) => cache.resolve(name, range)));
      if (new Set(versions).size > 1) {
        const found = ranges.map((range, i) => `"${packageLabel(name, range)}" is ${versions[i]}`).join(', ');
        throw new ComponentCodeError(`package "${name}" is imported in versions that do not agree (${found}): write one version in every import`);
      }
      await cache.ensure(name, versions[0]);
      outcome = { name, version: versions[0], installDir: cache.installDir(name, versions[0]) };
    } catch (error) {
      if (!(error instanceof ComponentCodeError)) throw error;
      outcome = { error: error.message };
    }
    for (const path of group.paths) prepared.set(path, outcome);
  }));
  return prepared;
}

async function resolveComponentImport(pluginBuild: PluginBuild, context: BundleContext, args: OnResolveArgs): Promise<OnResolveResult> {
  const request = classifyImport(args.path);
  switch (request.kind) {
    case 'relative':
      return refuse(`relative imports are not available for code saved without its files: "${args.path}"`);
    case 'url':
      return refuse(`URL imports are not supported: "${args.path}"`);
    case 'invalid':
      return refuse(request.reason);
    case 'builtin':
      return resolveBuiltin(request.module);
  }
  if (PROVIDED_PACKAGES[request.specifier.name] !== undefined && request.specifier.subpath === '') {
    return { path: `provided:${request.specifier.name}`, namespace: VIRTUAL, sideEffects: false };
  }
  if (!context.cache) return refuse(`package imports are not available yet: ${packageNameOf(args.path)}`);
  const prepared = context.prepared.get(args.path);
  if (!prepared) return refuse(`package import "${args.path}" was not prepared`);
  if ('error' in prepared) return refuse(prepared.error);
  const { name, subpath } = request.specifier;
  const resolved = await pluginBuild.resolve(`${name}${subpath}`, { kind: args.kind, resolveDir: prepared.installDir, pluginData: DIRECT });
  if (resolved.errors.length > 0 || resolved.namespace !== 'file' || !isInside(prepared.installDir, resolved.path)) {
    const what = subpath ? `has no "${subpath.slice(1)}" that the sandbox can load` : 'has no entry point that the sandbox can load';
    return refuse(`package "${name}@${prepared.version}" ${what}`);
  }
  return { path: resolved.path, sideEffects: resolved.sideEffects };
}

/**
 * An import inside an installed package. It must stay inside that package's install directory:
 * esbuild would otherwise walk up into the server's own node_modules (or follow a symlink) and
 * put host files in the component's bundle. What cannot be found there is a Node built-in (shim)
 * or a module that throws when required.
 */
async function resolvePackageImport(pluginBuild: PluginBuild, installDir: string, args: OnResolveArgs): Promise<OnResolveResult> {
  if (args.path.startsWith(SHIM_PREFIX)) return shimResult(args.path.slice(SHIM_PREFIX.length));
  if (args.path.startsWith('node:')) return resolveBuiltin(args.path.slice('node:'.length));
  // With Node semantics a built-in name is the built-in (as in Node), whatever polyfill of the same
  // name a package installed: one Buffer, one EventEmitter for everyone.
  if (isNodeBuiltin(args.path)) return resolveBuiltin(args.path);
  const resolved = await pluginBuild.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: DIRECT });
  if (resolved.errors.length === 0) {
    if (resolved.namespace !== 'file') return { path: `empty:${args.path}`, namespace: VIRTUAL, sideEffects: false };
    if (isInside(installDir, resolved.path)) return { path: resolved.path, sideEffects: resolved.sideEffects, suffix: resolved.suffix };
  }
  const owner = relative(dirname(installDir), installDir);
  return { path: `missing:${args.path} (imported by ${owner})`, namespace: VIRTUAL };
}

async function resolveImport(pluginBuild: PluginBuild, context: BundleContext, args: OnResolveArgs): Promise<OnResolveResult | undefined> {
  if ((args.pluginData as typeof DIRECT | undefined)?.sluiceDirect) return undefined;
  if (args.path === GLOBALS_INJECT) return { path: 'globals:component', namespace: VIRTUAL, sideEffects: false };
  if (args.namespace === VIRTUAL) return shimResult(args.path.slice(SHIM_PREFIX.length));
  const importer = args.namespace === 'file' && isAbsolute(args.importer) ? args.importer : null;
  if (importer && (isInside(SANDBOX_SOURCE_DIR, importer) || isPolyfillFile(importer))) {
    return args.path.startsWith(SHIM_PREFIX) ? shimResult(args.path.slice(SHIM_PREFIX.length)) : undefined;
  }
  const installDir = importer && context.cache ? context.cache.installDirOf(importer) : null;
  if (installDir) return resolvePackageImport(pluginBuild, installDir, args);
  return resolveComponentImport(pluginBuild, context, args);
}

/** Renames Node globals in an installed package file to locals bound to the shims. */
async function loadPackageFile(path: string): Promise<{ contents: string; loader: 'js'; resolveDir: string }> {
  const resolveDir = dirname(path);
  const cached = rewrittenSources.get(path);
  if (cached !== undefined) return { contents: cached, loader: 'js', resolveDir };
  const source = await readFile(path, 'utf8');
  if (!MENTIONS_NODE_GLOBAL.test(source)) return { contents: source, loader: 'js', resolveDir };
  let code: string;
  try {
    code = (await transform(source, { loader: 'js', define: PACKAGE_DEFINES, sourcefile: path, logLevel: 'silent' })).code;
  } catch {
    // Left to the bundle step, which reports the syntax error with its location.
    return { contents: source, loader: 'js', resolveDir };
  }
  const used = PACKAGE_GLOBALS.filter((g) => code.includes(g.local));
  if (used.length > 0) {
    const prologue = DIRECTIVE_PROLOGUE.exec(code)?.[0] ?? '';
    code = `${prologue}${used.map((g) => `var ${g.local} = ${g.init};`).join(' ')}\n${code.slice(prologue.length)}`;
  }
  if (code.length < MAX_CACHED_SOURCE_CHARS / 8) {
    rewrittenSources.set(path, code);
    rewrittenChars += code.length;
    for (const [oldest, text] of rewrittenSources) {
      if (rewrittenChars <= MAX_CACHED_SOURCE_CHARS) break;
      rewrittenSources.delete(oldest);
      rewrittenChars -= text.length;
    }
  }
  return { contents: code, loader: 'js', resolveDir };
}

/** JSON files from this size on are bundled as `JSON.parse` of their text (see loadPackageJson). */
const JSON_PARSE_MIN_BYTES = 8 * 1024;

/**
 * A large JSON file of an installed package (mime-db's 230 KB table, which axios loads through
 * form-data and mime-types), bundled as `JSON.parse` of its compact text instead of an object
 * literal printed over many lines: V8 keeps the script text and no literal boilerplate. Measured
 * on mime-db: 254 -> 163 KB of bundle, 2.22 -> 2.02 MB of warm isolate heap (bench probe).
 * Small files keep esbuild's JSON loader.
 */
async function loadPackageJson(path: string): Promise<{ contents: string; loader: 'js'; resolveDir: string } | undefined> {
  const text = await readFile(path, 'utf8');
  if (text.length < JSON_PARSE_MIN_BYTES) return undefined;
  let compact: string;
  try {
    compact = JSON.stringify(JSON.parse(text));
  } catch {
    // Left to esbuild's JSON loader, which reports the error with its location.
    return undefined;
  }
  return { contents: `module.exports = JSON.parse(${JSON.stringify(compact)});`, loader: 'js', resolveDir: dirname(path) };
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// Every import goes through here: the component's own imports (packages, built-ins, refusals),
// imports inside installed packages (kept inside their install directory) and our shims.
function importsPlugin(context: BundleContext): Plugin {
  // A throw inside a callback would become a build error, i.e. a 400: only the code's faults may.
  const guarded = <A extends unknown[], R>(callback: (...args: A) => Promise<R>) => async (...args: A): Promise<R | OnResolveResult> => {
    try {
      return await callback(...args);
    } catch (error) {
      if (!(error instanceof ComponentCodeError)) context.infrastructureError ??= error;
      return refuse(message(error));
    }
  };
  return {
    name: 'sluice-imports',
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter: /.*/ }, guarded((args: OnResolveArgs) => resolveImport(pluginBuild, context, args)));
      pluginBuild.onLoad({ filter: /.*/, namespace: VIRTUAL }, guarded((args: { path: string }) => loadVirtual(args.path)));
      const cache = context.cache;
      const isPackageFile = (path: string) => isPolyfillFile(path) || (cache?.installDirOf(path) ?? null) !== null;
      pluginBuild.onLoad({ filter: /\.[cm]?js$/ }, guarded(async (args: { path: string }) => (isPackageFile(args.path) ? loadPackageFile(args.path) : undefined)));
      pluginBuild.onLoad({ filter: /\.json$/ }, guarded(async (args: { path: string }) => (isPackageFile(args.path) ? loadPackageJson(args.path) : undefined)));
    },
  };
}

const NON_ASCII = /[^\x00-\x7f]/g;

/**
 * The bundle with every non-ASCII code unit left by esbuild written as a `\uXXXX` escape. With
 * `charset: 'ascii'` esbuild escapes strings, regular expressions and identifiers itself; what it
 * leaves are the comments it keeps inside expressions (follow-redirects has a `[…]` in one), where
 * an escape is just text. One such character would make the whole source two bytes per character
 * in every warm isolate (see `charset` below).
 */
function asciiSource(text: string): string {
  return text.replace(NON_ASCII, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function loaderFor(filename: string): 'ts' | 'js' {
  return /\.[cm]?ts$/i.test(filename) ? 'ts' : 'js';
}

/**
 * How to read code: a file name decides; code sent without one (`component_code`) is JavaScript
 * unless only TypeScript parses it (type annotations, `defineSource<...>`, interfaces). JavaScript
 * first, because a few valid JavaScript texts mean something else as TypeScript.
 */
async function loaderOf(code: string, filename: string | undefined): Promise<'ts' | 'js'> {
  if (filename !== undefined) return loaderFor(filename);
  const parses = (loader: 'ts' | 'js') => transform(code, { loader, logLevel: 'silent' }).then(() => true, () => false);
  if (await parses('js')) return 'js';
  return (await parses('ts')) ? 'ts' : 'js';
}

function toCodeError(errors: Message[]): ComponentCodeError {
  const first = errors[0];
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more error${errors.length > 2 ? 's' : ''})` : '';
  if (!first?.location) return new ComponentCodeError(`${first?.text ?? 'the component could not be bundled'}${more}`);
  // esbuild columns are 0-based; editors (and our API) count from 1.
  const location = { line: first.location.line, column: first.location.column + 1 };
  return new ComponentCodeError(`${first.text} at line ${location.line}, column ${location.column}${more}`, location);
}

function buildErrors(error: unknown): Message[] | null {
  const errors = (error as { errors?: Message[] }).errors;
  return Array.isArray(errors) && errors.length > 0 ? errors : null;
}

/**
 * Compiles a component (an ES module whose default export is the definition, or CommonJS
 * `module.exports = {...}`; TypeScript when `filename` ends in `.ts`) into one script for the
 * sandbox. With a package cache, bare imports (`lodash`, `dayjs@^1.11.0`, `@scope/pkg@1.2.3/sub`)
 * are installed and bundled, and Node built-ins resolve to shims (npm's `events` and
 * `path-browserify`; our own buffer, util, url, querystring, crypto hashing, process, timers) or
 * to stubs that throw when called.
 * Rejects with ComponentCodeError for syntax errors, unsupported imports and packages that cannot
 * be had; any other rejection is an infrastructure failure.
 */
export async function bundleComponent(code: string, opts: BundleOptions = {}): Promise<BundledComponent> {
  const loader = await loaderOf(code, opts.filename);
  const filename = opts.filename ?? (loader === 'ts' ? 'component.ts' : 'component.js');
  const codeHash = createHash('sha256').update(code).digest('hex');
  const context: BundleContext = { cache: opts.packageCache, prepared: new Map(), infrastructureError: undefined };
  try {
    if (context.cache) context.prepared = await preparePackages(await importsOf(code, loader, filename), context.cache);
    const result = await build({
      stdin: { contents: code, loader, sourcefile: filename },
      bundle: true,
      write: false,
      format: 'iife',
      globalName: COMPONENT_GLOBAL,
      // Node semantics: packages' Node builds (axios's http adapter with streams, not its fetch
      // adapter), the built-ins they import served by the shims.
      platform: 'node',
      target: 'es2022',
      conditions: ['node'],
      mainFields: ['main', 'module'],
      // ASCII, with everything else escaped: an isolate keeps a script's source for as long as it
      // lives, at one byte per character only if every character fits in Latin-1. One U+FFFD in a
      // package (string_decoder has several) doubles the whole bundle's share of every warm
      // isolate: measured on axios + feedparser, 5.43 MB of heap with UTF-8, 4.27 MB with ASCII.
      charset: 'ascii',
      legalComments: 'none',
      // Keeps `fn.name` and class names intact: ConfigurationError is recognised by its name.
      keepNames: true,
      logLevel: 'silent',
      define: { 'process.env.NODE_ENV': '"production"' },
      inject: MENTIONS_COMPONENT_GLOBAL.test(code) ? [GLOBALS_INJECT] : [],
      plugins: [importsPlugin(context)],
    });
    const packages: Record<string, string> = {};
    for (const prepared of context.prepared.values()) if (!('error' in prepared)) packages[prepared.name] = prepared.version;
    return { bundle: asciiSource(result.outputFiles[0].text), codeHash, packages };
  } catch (error) {
    if (context.infrastructureError !== undefined) throw context.infrastructureError;
    const errors = buildErrors(error);
    if (errors) throw toCodeError(errors);
    throw error;
  }
}
