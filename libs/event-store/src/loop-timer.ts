import { loadNativeLibrary } from '@app/native';

/**
 * A one-shot timer that can be re-armed and whose `stop` wakes nothing later: a libuv timer of
 * its own (`libs/event-store/native/loop-timer.c`, compiled by `scripts/build.mjs` into
 * `dist/native/loop-timer.node`). Node's `clearTimeout` leaves Node's one libuv timer armed for
 * the cleared timer's time, so a timer that is nearly always cleared early (the store's linger)
 * still woke the loop once per arming, for nothing (see the C file's header). Without the library
 * it is `setTimeout` and `clearTimeout`, with their extra wake-ups.
 */
export interface LoopTimer {
  /** (Re)arms the timer to call back `ms` from now, replacing any time set before. */
  start(ms: number): void;
  stop(): void;
  /** Stops it for good and lets go of the callback. */
  close(): void;
  /** True when it is libuv's own timer (the library is loaded), false for the `setTimeout` stand-in. */
  readonly native: boolean;
}

interface NativeLoopTimers {
  create(callback: () => void): unknown;
  start(timer: unknown, ms: number): void;
  stop(timer: unknown): void;
  close(timer: unknown): void;
  unref?(timer: unknown): void;
}

let native: NativeLoopTimers | null | undefined;

function load(): NativeLoopTimers | null {
  if (native === undefined) {
    native = loadNativeLibrary<NativeLoopTimers>('loop-timer.node', "event store: its timers are setTimeout's, which wake the loop once more per cleared timer");
  }
  return native;
}

/**
 * A timer calling `callback`; `useNative: false` gives the `setTimeout` stand-in (for comparisons).
 * `keepsAlive: false`: an armed timer does not keep the process alive (`setTimeout(...).unref()`).
 */
export function loopTimer(callback: () => void, useNative = true, keepsAlive = true): LoopTimer {
  // A library built before `unref` existed cannot give a timer that lets the process go: the stand-in does.
  const lib = useNative ? load() : null;
  if (lib && (keepsAlive || lib.unref)) {
    const handle = lib.create(callback);
    if (!keepsAlive) lib.unref!(handle);
    return {
      native: true,
      start: (ms) => lib.start(handle, ms),
      stop: () => lib.stop(handle),
      close: () => lib.close(handle),
    };
  }
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  return {
    native: false,
    start(ms) {
      stop();
      timer = setTimeout(() => {
        timer = undefined;
        callback();
      }, ms);
      if (!keepsAlive) timer.unref();
    },
    stop,
    close: stop,
  };
}
