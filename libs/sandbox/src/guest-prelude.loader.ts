import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Order of the host functions handed to the prelude (`$0`...`$9`), as HostBindings names them. */
export const HOST_BINDING_NAMES = [
  'log', 'timerStart', 'timerClear', 'fetchStart', 'urlParse', 'urlSet', 'digest', 'randomBytes', 'nodeHash', 'streamControl',
  // HostNowBindings: the synchronous twins used inside a synchronous entry, and its result.
  'logNow', 'timerStartNow', 'timerClearNow', 'fetchStartNow', 'streamControlNow', 'settledNow',
] as const;

let cached: string | null = null;

/**
 * The script installed in every isolate before the component: the compiled guest modules
 * (`guest/*.guest.js`, type-checked TypeScript compiled by the build) joined with a tiny module
 * table, ending in `install(host)`. It evaluates to a function whose arguments are the host
 * Callbacks, so they live only in the runtime's closures and never on the global object.
 */
export function guestPreludeSource(dir: string = join(__dirname, 'guest')): string {
  if (cached !== null && dir === join(__dirname, 'guest')) return cached;
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.guest.js')).sort() : [];
  if (!files.includes('guest-runtime.guest.js')) {
    throw new Error(`the compiled guest runtime is missing in ${dir}: run "npm run build"`);
  }
  const modules = files.map((file) => {
    const source = readFileSync(join(dir, file), 'utf8').replace(/^\/\/# sourceMappingURL=.*$/m, '');
    return `${JSON.stringify(`./${file.slice(0, -'.js'.length)}`)}: function (exports, require) {\n${source}\n}`;
  });
  const host = HOST_BINDING_NAMES.map((name, i) => `${name}: $${i}`).join(', ');
  const source = [
    `const modules = {\n${modules.join(',\n')}\n};`,
    'const loaded = Object.create(null);',
    'function require(name) {',
    '  if (loaded[name]) return loaded[name];',
    '  const factory = modules[name];',
    "  if (!factory) throw new Error('guest runtime: unknown module ' + name);",
    '  const exports = {};',
    '  loaded[name] = exports;',
    '  factory(exports, require);',
    '  return exports;',
    '}',
    `return require('./guest-runtime.guest').install({ ${host} });`,
  ].join('\n');
  // A function expression: compiled once per isolate as a Script (so V8's code cache applies) and
  // called with the host Callbacks as its arguments.
  const params = HOST_BINDING_NAMES.map((_, i) => `$${i}`).join(', ');
  const wrapped = `(function (${params}) {\n${source}\n})`;
  if (dir === join(__dirname, 'guest')) cached = wrapped;
  return wrapped;
}
