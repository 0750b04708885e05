import { dirname } from 'node:path';
import { build } from './esbuild.loader';

/**
 * One component module from a file and the files it imports by relative path (shared `common`
 * objects, app files), the way a deploy from a file sends it: relative imports are inlined, bare
 * package imports stay imports for `bundleComponent` to install at save. The text is
 * deterministic for the same files and esbuild version, so its hash identifies the code: the
 * file comments esbuild writes are relative to `root` (default: the file's folder), never to
 * the working directory of the process.
 */
export async function inlineRelativeImports(file: string, root: string = dirname(file)): Promise<string> {
  const result = await build({
    entryPoints: [file],
    absWorkingDir: root,
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    charset: 'utf8',
    legalComments: 'none',
    logLevel: 'silent',
    plugins: [{
      name: 'packages-stay-imports',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => (args.kind === 'entry-point' ? undefined : { path: args.path, external: true }));
      },
    }],
  });
  return result.outputFiles[0].text;
}
