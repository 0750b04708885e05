import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** Where `dist/native/<name>` is: from `dist/`, or, under jest, from the sources; undefined when it is not built. */
export function nativeLibraryFile(name: string): string | undefined {
  const candidates = [
    // dist/libs/native/src -> dist/native
    join(__dirname, '..', '..', '..', 'native', name),
    // libs/native/src (jest runs the sources) -> dist/native
    join(__dirname, '..', '..', '..', 'dist', 'native', name),
  ];
  return candidates.find((f) => existsSync(f));
}

/**
 * One of our native libraries, `dist/native/<name>` (compiled by `scripts/build.mjs`), loaded from
 * `dist/` or, under jest, from the sources; null when it is not built or does not load, which is
 * said once on stderr as `<what> (<why>)`: each caller then goes on without it.
 */
export function loadNativeLibrary<T>(name: string, what: string): T | null {
  const file = nativeLibraryFile(name);
  try {
    if (!file) throw new Error(`${join(__dirname, '..', '..', '..', 'native', name)} is not built (npm run build compiles it)`);
    return require(file) as T;
  } catch (error) {
    console.error(`${what} (${(error as Error).message})`);
    return null;
  }
}
