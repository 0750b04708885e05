import { nativeLibraryFile } from '@app/native';
import ivm from 'isolated-vm';

/** The native watchdog of synchronous entries (`libs/sandbox/native/sync-watchdog.cc`). */
interface NativeWatchdog {
  start(budgetMs: number, limitMs: number): void;
  claim(): WatchedIsolate;
  enter(isolate: WatchedIsolate, line?: string): void;
  leave(): boolean;
}

/**
 * How long one synchronous entry may hold a sandbox worker's main thread before the watchdog
 * stops the guest's code in it (ms). The entry is then given up, its isolate disposed, and the
 * run made again asynchronously (`SYNC_ABANDONED`).
 */
export const SYNC_BUDGET_MS = 20;

/**
 * How long one synchronous entry may hold a sandbox worker's main thread before the watchdog ends
 * the worker, naming the entry's instance (ms). Far past the budget after which the watchdog
 * stops guest code: only a step V8 does not interrupt gets here (a collection of a large heap, a
 * parse of a string built by earlier runs), or one that never returns (a catastrophic
 * out-of-memory, which hangs the thread that entered). A run that needs this long on its own
 * thread, rather than on this one, is not what synchronous entries are for.
 */
export const SYNC_STUCK_MS = 5000;

/** An isolate the watchdog can stop (the V8 isolate behind an `ivm.Isolate`, as an opaque handle). */
export type WatchedIsolate = { readonly __watchedIsolate: unique symbol };

/** Entries watched by the native thread; null where the library is not built or cannot load. */
export interface SyncWatchdog {
  /** Lets the watchdog stop code running in the isolate of `context` (once per isolate, before its first entry). */
  watch(context: ivm.Context): WatchedIsolate;
  /** Before an entry into `isolate`: `line` is what to write on stderr if it never ends (passed to the thread only when it changes). */
  enter(isolate: WatchedIsolate, line: string): void;
  /** After the entry: true when the watchdog stopped it at its budget; the isolate must then be disposed. */
  leave(): boolean;
}

let loaded: SyncWatchdog | null | undefined;

/**
 * The process's watchdog, started on first use; null (and said once on stderr) when the library
 * is missing: then no run is entered synchronously, since an entry could be neither stopped at its
 * budget nor named when stuck.
 */
export function syncWatchdog(): SyncWatchdog | null {
  if (loaded !== undefined) return loaded;
  const file = nativeLibraryFile('sync-watchdog.node');
  try {
    if (!file) throw new Error('dist/native/sync-watchdog.node is not built (npm run build compiles it)');
    const native = require(file) as NativeWatchdog;
    native.start(SYNC_BUDGET_MS, SYNC_STUCK_MS);
    // The same library, loaded into each isolate as isolated-vm's native module, tells the
    // watchdog which V8 isolate that is (its `InitForContext`); the library is loaded once.
    const module = new ivm.NativeModule(file);
    let last = '';
    loaded = {
      watch(context) {
        module.createSync(context).release();
        return native.claim();
      },
      enter(isolate, line) {
        if (line === last) native.enter(isolate);
        else {
          native.enter(isolate, line);
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
