import { createHash } from 'node:crypto';
import { build, type Message, type Plugin } from 'esbuild';
import { ComponentCodeError } from './component-code.error';

/** Name of the global var the bundle assigns its exports to (the worker reads it back). */
export const COMPONENT_GLOBAL = '__sluiceComponent';

/** A component compiled for the sandbox. */
export interface BundledComponent {
  /** A self-contained script; evaluated, it leaves the component's exports in `var __sluiceComponent`. */
  bundle: string;
  /** sha256 (hex) of the original code: the same code always gives the same hash. */
  codeHash: string;
}

/** The package a bare specifier names: `lodash/get` -> `lodash`, `@scope/pkg@1.2/x` -> `@scope/pkg`. */
export function packageNameOf(specifier: string): string {
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
  const at = name.indexOf('@', 1);
  return at === -1 ? name : name.slice(0, at);
}

// Code saved without files can only import packages; packages come with a later issue, so every
// import is refused here with a message naming what was imported.
const importGuard: Plugin = {
  name: 'sluice-import-guard',
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /.*/ }, (args) => {
      const path = args.path;
      if (path.startsWith('.') || path.startsWith('/')) {
        return { errors: [{ text: `relative imports are not available for code saved without its files: "${path}"` }] };
      }
      if (/^[a-z][a-z0-9+.-]*:\/\//i.test(path)) {
        return { errors: [{ text: `URL imports are not supported: "${path}"` }] };
      }
      return { errors: [{ text: `package imports are not available yet: ${packageNameOf(path)}` }] };
    });
  },
};

function loaderFor(filename: string): 'ts' | 'js' {
  return /\.[cm]?ts$/i.test(filename) ? 'ts' : 'js';
}

function toCodeError(errors: Message[]): ComponentCodeError {
  const first = errors[0];
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more error${errors.length > 2 ? 's' : ''})` : '';
  if (!first?.location) return new ComponentCodeError(`${first?.text ?? 'the component could not be bundled'}${more}`);
  // esbuild columns are 0-based; editors (and our API) count from 1.
  const location = { line: first.location.line, column: first.location.column + 1 };
  return new ComponentCodeError(`${first.text} at line ${location.line}, column ${location.column}${more}`, location);
}

/**
 * Compiles a component (an ES module whose default export is the definition, or CommonJS
 * `module.exports = {...}`; TypeScript when `filename` ends in `.ts`) into one script for the
 * sandbox. Rejects with ComponentCodeError for syntax errors and unsupported imports; any other
 * rejection is an infrastructure failure.
 */
export async function bundleComponent(code: string, opts: { filename?: string } = {}): Promise<BundledComponent> {
  const filename = opts.filename ?? 'component.js';
  const codeHash = createHash('sha256').update(code).digest('hex');
  try {
    const result = await build({
      stdin: { contents: code, loader: loaderFor(filename), sourcefile: filename },
      bundle: true,
      write: false,
      format: 'iife',
      globalName: COMPONENT_GLOBAL,
      platform: 'browser',
      target: 'es2022',
      conditions: ['worker', 'browser'],
      charset: 'utf8',
      legalComments: 'none',
      // Keeps `fn.name` and class names intact: ConfigurationError is recognised by its name.
      keepNames: true,
      logLevel: 'silent',
      define: { 'process.env.NODE_ENV': '"production"' },
      plugins: [importGuard],
    });
    return { bundle: result.outputFiles[0].text, codeHash };
  } catch (error) {
    const errors = (error as { errors?: Message[] }).errors;
    if (Array.isArray(errors) && errors.length > 0) throw toCodeError(errors);
    throw error;
  }
}
