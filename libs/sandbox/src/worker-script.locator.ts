import { existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** File name of the compiled worker entry point. */
export const WORKER_SCRIPT_NAME = 'sandbox-worker.main.js';

function repositoryRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

/**
 * The JavaScript file the supervisor forks. From the build (dist/) it is the sibling of this
 * module; when the host itself runs TypeScript sources (jest), it is the compiled twin under
 * `<repo>/dist/`, because workers always run compiled code (they read the compiled guest runtime).
 * Throws, naming the missing file, when it was not built.
 */
export function resolveWorkerScript(explicit?: string): string {
  if (explicit) {
    if (!existsSync(explicit)) throw new Error(`the sandbox worker script ${explicit} does not exist`);
    return explicit;
  }
  if (__filename.endsWith('.js')) return join(__dirname, WORKER_SCRIPT_NAME);
  const root = repositoryRoot(__dirname);
  const twin = join(root, 'dist', relative(root, __dirname), WORKER_SCRIPT_NAME);
  if (!existsSync(twin)) {
    throw new Error(`the sandbox worker script ${twin} is missing: run "npm run build" (workers run the compiled sandbox even when the host runs TypeScript sources)`);
  }
  return twin;
}
