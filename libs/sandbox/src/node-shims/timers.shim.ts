// Node's `timers` for packages bundled into the sandbox, over the guest's web timers.
// `setImmediate` is a zero-delay timeout: the guest has no separate check phase.

type AnyFunction = (...args: unknown[]) => unknown;

function setImmediate(callback: AnyFunction, ...args: unknown[]): ReturnType<typeof setTimeout> {
  if (typeof callback !== 'function') throw new TypeError('The "callback" argument must be of type function');
  return globalThis.setTimeout(() => callback(...args), 0);
}

function clearImmediate(handle: ReturnType<typeof setTimeout> | undefined): void {
  globalThis.clearTimeout(handle);
}

export = {
  setTimeout: (...args: Parameters<typeof setTimeout>): ReturnType<typeof setTimeout> => globalThis.setTimeout(...args),
  clearTimeout: (handle?: ReturnType<typeof setTimeout>): void => globalThis.clearTimeout(handle),
  setInterval: (...args: Parameters<typeof setInterval>): ReturnType<typeof setInterval> => globalThis.setInterval(...args),
  clearInterval: (handle?: ReturnType<typeof setInterval>): void => globalThis.clearInterval(handle),
  setImmediate,
  clearImmediate,
};
