import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The native watchdog of synchronous entries (`libs/sandbox/native/sync-watchdog.c`). */
interface NativeWatchdog {
  start(limitMs: number): void;
  enter(line?: string): void;
  leave(): void;
}

/**
 * How long one synchronous entry may hold a sandbox worker's main thread before the watchdog ends
 * the worker, naming the entry's instance (ms). Far past the 20 ms budget after which isolated-vm
 * stops guest code: only a step V8 does not interrupt gets here (a collection of a large heap, a
 * parse of a string built by earlier runs), or one that never returns (a catastrophic
 * out-of-memory, which hangs the thread that entered). A run that needs this long on its own
 * thread, rather than on this one, is not what synchronous entries are for.
 */
export const SYNC_STUCK_MS = 5000;

/** Entries watched by the native thread; null where the library is not built or cannot load. */
export interface SyncWatchdog {
  /** Before an entry: `line` is what to write on stderr if it never ends (written to the thread only when it changes). */
  enter(line: string): void;
  leave(): void;
}

let loaded: SyncWatchdog | null | undefined;

function candidates(): string[] {
  return [
    // dist/libs/sandbox/src -> dist/native
    join(__dirname, '..', '..', '..', 'native', 'sync-watchdog.node'),
    // libs/sandbox/src (jest runs the sources) -> dist/native
    join(__dirname, '..', '..', '..', 'dist', 'native', 'sync-watchdog.node'),
  ];
}

/**
 * The process's watchdog, started on first use; null (and said once on stderr) when the library
 * is missing: then no run is entered synchronously, since a stuck entry could not be named.
 */
export function syncWatchdog(): SyncWatchdog | null {
  if (loaded !== undefined) return loaded;
  const file = candidates().find((f) => existsSync(f));
  try {
    if (!file) throw new Error(`${candidates()[0]} is not built (npm run build compiles it)`);
    const native = require(file) as NativeWatchdog;
    native.start(SYNC_STUCK_MS);
    let last = '';
    loaded = {
      enter(line) {
        if (line === last) native.enter();
        else {
          native.enter(line);
          last = line;
        }
      },
      leave: () => native.leave(),
    };
  } catch (error) {
    loaded = null;
    console.error(`sandbox worker: every run enters its isolate asynchronously (${(error as Error).message})`);
  }
  return loaded;
}
