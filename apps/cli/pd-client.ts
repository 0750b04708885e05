import { existsSync, statSync } from 'node:fs';
import { build, type Metafile } from 'esbuild';
import { resolve } from 'node:path';
import { CliError, ServerError } from './cli-error';
import type { ConfigurableProp } from './props';
import type { SluiceApi } from './sluice-api';

/**
 * A deploy target that is a local file: it has a path separator or a component file extension
 * (`.js .mjs .cjs .ts .mts .cts`), or exists on disk. Such a target is never sent as a key, so
 * a typo is reported as a missing file.
 */
export function looksLikeFile(target: string): boolean {
  return /[\\/]/.test(target) || /\.(m|c)?(j|t)s$/.test(target) || (existsSync(target) && statSync(target).isFile());
}

/** The bundled code of a component file and the local files it was made from (absolute paths). */
export interface Bundle {
  code: string;
  inputs: string[];
}

/**
 * Bundles a component file with its relative imports (shared `common` objects, app files) into
 * one module. Package imports stay imports: the server installs and bundles them at save. The
 * esbuild metafile gives every local input, which `pd dev` watches.
 */
export async function bundleComponentFile(file: string): Promise<Bundle> {
  if (!existsSync(file)) throw CliError.usage(`no such file: ${file}`);
  let result: { outputFiles: { text: string }[]; metafile: Metafile };
  try {
    result = await build({
      entryPoints: [file],
      bundle: true,
      write: false,
      metafile: true,
      format: 'esm',
      platform: 'neutral',
      target: 'es2022',
      logLevel: 'silent',
      plugins: [{
        name: 'packages-stay-imports',
        setup(b) {
          b.onResolve({ filter: /^[^./]/ }, (args) => (args.kind === 'entry-point' ? undefined : { path: args.path, external: true }));
        },
      }],
    });
  } catch (e) {
    const first = (e as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors?.[0];
    const where = first?.location ? `${first.location.file}:${first.location.line}: ` : '';
    throw CliError.usage(`cannot bundle ${file}: ${where}${first?.text ?? (e as Error).message}`);
  }
  return { code: result.outputFiles[0].text, inputs: Object.keys(result.metafile.inputs).map((p) => resolve(p)) };
}

/** Compatibility name of {@link bundleComponentFile} returning only the code. */
export async function bundleLocalComponent(file: string): Promise<string> {
  return (await bundleComponentFile(file)).code;
}

/** A saved component as `/v1/components` answers. */
export interface SavedComponent {
  id: string;
  key: string;
  name: string;
  version: string;
  type: string;
  configurable_props: ConfigurableProp[];
  warnings?: { field: string; message: string }[];
}

/**
 * The component a target names, saved on the server so that its props are known before the
 * deploy: a file (bundled), a URL, or a registry key (`key` or `key@version`). A key that the
 * registry does not list is `undefined`: the caller sends it as it is and the server answers.
 */
export async function resolveComponent(api: SluiceApi, target: string): Promise<SavedComponent | undefined> {
  if (/^https?:\/\//.test(target)) return (await api.post('/v1/components', { component_url: target })).data;
  if (looksLikeFile(target)) return (await api.post('/v1/components', { component_code: (await bundleComponentFile(target)).code })).data;
  const at = target.lastIndexOf('@');
  const key = at > 0 ? target.slice(0, at) : target;
  try {
    return (await api.get(`/v1/components/registry/${encodeURIComponent(key)}`)).data;
  } catch (e) {
    if (e instanceof ServerError && e.status === 404) return undefined;
    throw e;
  }
}
