import type * as Esbuild from 'esbuild';

/** How long esbuild's service process is kept after its last build, for the next save. */
const ESBUILD_IDLE_MS = 500;

let loaded: typeof Esbuild | undefined;
let using = 0;
let idleTimer: NodeJS.Timeout | undefined;

/**
 * Runs `use` with the esbuild package, loaded on first use (a server that never saves a component
 * never loads it). esbuild keeps a service process (about 15 MB, pinging the server) after a
 * build; it is stopped once no build has run for {@link ESBUILD_IDLE_MS}, and the next build
 * starts a new one. Stopping it only while nothing uses it keeps builds in progress intact.
 */
async function withEsbuild<T>(use: (api: typeof Esbuild) => Promise<T>): Promise<T> {
  loaded ??= require('esbuild') as typeof Esbuild;
  const api = loaded;
  using++;
  if (idleTimer) clearTimeout(idleTimer);
  idleTimer = undefined;
  try {
    return await use(api);
  } finally {
    if (--using === 0) {
      idleTimer = setTimeout(() => {
        idleTimer = undefined;
        if (using === 0) void api.stop();
      }, ESBUILD_IDLE_MS);
      idleTimer.unref();
    }
  }
}

/** esbuild's `build`, through the loader above (same options and result). */
export function build<T extends Esbuild.BuildOptions>(options: T): Promise<Esbuild.BuildResult<T>> {
  return withEsbuild((api) => (api.build as (o: T) => Promise<Esbuild.BuildResult<T>>)(options));
}

/** esbuild's `transform`, through the loader above (same options and result). */
export function transform<T extends Esbuild.TransformOptions>(input: string, options: T): Promise<Esbuild.TransformResult<T>> {
  return withEsbuild((api) => (api.transform as (i: string, o: T) => Promise<Esbuild.TransformResult<T>>)(input, options));
}
