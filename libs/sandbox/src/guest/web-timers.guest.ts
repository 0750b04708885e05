import type { HostBindings } from './host-bindings.guest';
import { current } from './invocation-scope.guest';

const MAX_DELAY = 2147483647;

/** What `setTimeout` returns: a number to web code, with Node's `ref`/`unref` for Node-minded code. */
export class Timeout {
  constructor(readonly id: number) {}

  ref(): this {
    return this;
  }

  unref(): this {
    return this;
  }

  hasRef(): boolean {
    return true;
  }

  [Symbol.toPrimitive](): number {
    return this.id;
  }
}

/** The timer functions, plus `fire` for the host to call when a timer is due. */
export interface GuestTimers {
  setTimeout(callback: unknown, ms?: unknown, ...args: unknown[]): Timeout;
  setInterval(callback: unknown, ms?: unknown, ...args: unknown[]): Timeout;
  clearTimeout(handle: unknown): void;
  clearInterval(handle: unknown): void;
  /** Runs timer `id` of invocation `seq` if both are still current; the callback's exception propagates. */
  fire(seq: number, id: number): void;
}

/**
 * Timers are armed on the host (the isolate has no event loop of its own). Timers armed while the
 * bundle loads never fire: no invocation exists to bound the time they would use.
 */
export function createTimers(host: Pick<HostBindings, 'timerStart' | 'timerClear'>): GuestTimers {
  let nextId = 0;

  const start = (callback: unknown, ms: unknown, args: unknown[], repeat: boolean): Timeout => {
    if (typeof callback !== 'function') throw new TypeError('The "callback" argument must be of type function');
    const id = ++nextId;
    const scope = current.scope;
    if (scope && !scope.loading) {
      const delay = Number(ms);
      const clamped = Number.isFinite(delay) && delay > 0 ? Math.min(Math.floor(delay), MAX_DELAY) : 0;
      scope.timers.set(id, { callback: callback as (...a: unknown[]) => unknown, args, repeat });
      scope.usedHost = true;
      host.timerStart(scope.seq, id, clamped, repeat);
    }
    return new Timeout(id);
  };

  const clear = (handle: unknown): void => {
    const scope = current.scope;
    const id = handle instanceof Timeout ? handle.id : Number(handle);
    if (scope && scope.timers.delete(id)) host.timerClear(scope.seq, id);
  };

  return {
    setTimeout: (callback, ms, ...args) => start(callback, ms, args, false),
    setInterval: (callback, ms, ...args) => start(callback, ms, args, true),
    clearTimeout: clear,
    clearInterval: clear,
    fire(seq, id) {
      const scope = current.scope;
      if (!scope || scope.seq !== seq) return;
      const timer = scope.timers.get(id);
      if (!timer) return;
      if (!timer.repeat) scope.timers.delete(id);
      timer.callback(...timer.args);
    },
  };
}
