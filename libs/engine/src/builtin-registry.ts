import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { slugify, type ComponentDefinition } from '@app/domain';
import { inlineRelativeImports } from '@app/sandbox';

/** A built-in component ready to be saved into an account without bundling or loading it again. */
export interface BuiltinComponent {
  key: string;
  version: string;
  type: 'source' | 'action';
  name: string;
  description?: string;
  /** The module text with its relative imports inlined: what an account's saved copy holds as `code`. */
  code: string;
  codeHash: string;
  bundle: string;
  definition: ComponentDefinition;
  /** Path of the entry file under the registry directory (for messages). */
  file: string;
}

/** A built-in whose file could not be bundled, loaded or validated, with why. */
export interface BuiltinFailure {
  file: string;
  error: string;
}

/** Turns the text of a built-in into its bundle and definition (the save path without recording). */
export type CompileBuiltin = (code: string, file: string) => Promise<{ bundle: string; codeHash: string; definition: ComponentDefinition }>;

/** A shipped built-in file that breaks the registry rules (registryRuleBreach). */
export class BuiltinRuleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BuiltinRuleError';
  }
}

/** The app slug every built-in key starts with (spec 2.4: `<app_name_slug>-<slugified-component-name>`). */
export const BUILTIN_APP_SLUG = 'sluice';

/**
 * The registry directory shipped with the server: `registry/components` of the checkout, found
 * by walking up from this module so it works from `dist/` and from the TypeScript sources.
 */
export function defaultRegistryDir(from: string = __dirname): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'registry', 'components');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return null;
  }
}

/**
 * Entry files of the registry: `<app>/sources/*.mjs` and `<app>/actions/*.mjs`. Shared files
 * (`<app>/common/...`, `<app>/<app>.app.mjs`) are only reached through their imports.
 */
export function registryEntryFiles(dir: string): string[] {
  const files: string[] = [];
  for (const app of readdirSync(dir, { withFileTypes: true })) {
    if (!app.isDirectory()) continue;
    for (const kind of ['sources', 'actions']) {
      const kindDir = join(dir, app.name, kind);
      if (!existsSync(kindDir)) continue;
      for (const f of readdirSync(kindDir, { withFileTypes: true })) {
        if (f.isFile() && f.name.endsWith('.mjs')) files.push(join(kindDir, f.name));
      }
    }
  }
  return files.sort();
}

/** Why a built-in's definition breaks the registry rules (key pattern, semver, file named after the key, kind by folder), or null. */
export function registryRuleBreach(def: ComponentDefinition, file: string): string | null {
  const expectedKey = `${BUILTIN_APP_SLUG}-${slugify(def.name)}`;
  if (def.key !== expectedKey) return `key must be "${expectedKey}" (app slug and slugified name), got ${JSON.stringify(def.key)}`;
  if (!/^\d+\.\d+\.\d+$/.test(def.version)) return `version must be a semantic version x.y.z, got "${def.version}"`;
  if (basename(file, '.mjs') !== expectedKey.slice(BUILTIN_APP_SLUG.length + 1)) return `file must be named ${expectedKey.slice(BUILTIN_APP_SLUG.length + 1)}.mjs after its key`;
  const kind = basename(dirname(file)) === 'actions' ? 'action' : 'source';
  if (def.type !== kind) return `is a ${def.type} in the ${kind}s folder`;
  return null;
}

/**
 * Sluice's own components, the same for every account. They are loaded at first use, not at
 * start-up: one of them imports a package, and a server that never uses the registry should
 * not install it. Each file loads on its own and a success is kept for the life of the process
 * (the files ship with the server and do not change under it); a failure (the package registry
 * unreachable) is reported and tried again at the next use.
 */
export class BuiltinRegistry {
  private readonly loaded = new Map<string, Promise<BuiltinComponent>>();

  constructor(private readonly dir: string | null, private readonly compile: CompileBuiltin) {}

  /** Every built-in that loads, by key, and the files that did not. */
  async all(): Promise<{ components: BuiltinComponent[]; failures: BuiltinFailure[] }> {
    if (!this.dir) return { components: [], failures: [] };
    const files = registryEntryFiles(this.dir);
    const outcomes = await Promise.allSettled(files.map((f) => this.load(f)));
    const components: BuiltinComponent[] = [];
    const failures: BuiltinFailure[] = [];
    outcomes.forEach((o, i) => {
      if (o.status === 'fulfilled') components.push(o.value);
      else failures.push({ file: relative(this.dir!, files[i]), error: o.reason instanceof Error ? o.reason.message : String(o.reason) });
    });
    return { components: components.sort((a, b) => a.key.localeCompare(b.key)), failures };
  }

  /**
   * The built-in with this key (and version, when given), or undefined. A key whose file exists
   * but cannot load rejects with the reason, so a deploy says why instead of "not found".
   */
  async find(key: string, version?: string): Promise<BuiltinComponent | undefined> {
    if (!this.dir) return undefined;
    // Files are named after the key without the app prefix (registryRuleBreach), so a deploy
    // loads one file, and a key no file is named after is not a built-in.
    const slug = key.startsWith(`${BUILTIN_APP_SLUG}-`) ? key.slice(BUILTIN_APP_SLUG.length + 1) : null;
    const named = slug === null ? undefined : registryEntryFiles(this.dir).find((f) => basename(f, '.mjs') === slug);
    if (!named) return undefined;
    const hit = await this.load(named);
    if (hit.key !== key) return undefined;
    return version === undefined || hit.version === version ? hit : undefined;
  }

  private load(file: string): Promise<BuiltinComponent> {
    let pending = this.loaded.get(file);
    if (!pending) {
      pending = this.loadFile(file);
      this.loaded.set(file, pending);
      pending.catch(() => this.loaded.delete(file));
    }
    return pending;
  }

  private async loadFile(file: string): Promise<BuiltinComponent> {
    const code = await inlineRelativeImports(file, this.dir!);
    const compiled = await this.compile(code, relative(this.dir!, file));
    const def = compiled.definition;
    const breach = registryRuleBreach(def, file);
    if (breach) throw new BuiltinRuleError(`built-in ${relative(this.dir!, file)}: ${breach}`);
    return {
      key: def.key!, version: def.version, type: def.type, name: def.name, description: def.description,
      code, codeHash: compiled.codeHash, bundle: compiled.bundle, definition: def, file: relative(this.dir!, file),
    };
  }
}
