// A stand-in for Node's `process`, given to packages that import it or use the `process` global
// and to component code that mentions `process` (registry components read `process.env`). The
// guest global has none until such a bundle loads. `version` and `versions` stay empty (nothing of
// the host's Node leaks), but it tags itself `[object process]`, as axios checks before choosing
// its Node adapter (the one that streams).
//
// `env` is empty except `PD_COMPONENT`, the id of the deployed component running the code, read
// from what the guest runtime sets for each invocation; no host environment variable ever reaches it.

type AnyFunction = (...args: unknown[]) => unknown;

function unavailable(name: string): () => never {
  return () => {
    throw new Error(`process.${name} is not available in the sandbox`);
  };
}

function returnThis<T>(this: T): T {
  return this;
}

function hrtime(previous?: [number, number]): [number, number] {
  const nanos = Math.round(performance.now() * 1e6);
  let seconds = Math.floor(nanos / 1e9);
  let rest = nanos % 1e9;
  if (previous) {
    seconds -= previous[0];
    rest -= previous[1];
    if (rest < 0) {
      seconds--;
      rest += 1e9;
    }
  }
  return [seconds, rest];
}
hrtime.bigint = (): bigint => BigInt(Math.round(performance.now() * 1e6));

/** Set by the guest runtime (guest-runtime.guest.ts) before each invocation. */
const COMPONENT_ID_HOOK = Symbol.for('sluice.componentId');

const env: Record<string, string | undefined> = {};
Object.defineProperty(env, 'PD_COMPONENT', {
  get: () => (globalThis as unknown as Record<symbol, string | undefined>)[COMPONENT_ID_HOOK],
  // A component may set its own value for the rest of the isolate's life, as it could in Node.
  set(value: unknown) {
    Object.defineProperty(env, 'PD_COMPONENT', { value: String(value), writable: true, enumerable: true, configurable: true });
  },
  enumerable: true,
  configurable: true,
});

const process = {
  [Symbol.toStringTag]: 'process',
  title: 'sandbox',
  // Packages that pick a browser build by this flag (debug) keep doing so: their Node builds want a tty.
  browser: true,
  env,
  argv: [] as string[],
  execArgv: [] as string[],
  version: '',
  versions: {} as Record<string, string>,
  platform: 'sandbox',
  release: { name: 'sandbox' },
  exitCode: undefined as number | undefined,
  nextTick(callback: AnyFunction, ...args: unknown[]): void {
    if (typeof callback !== 'function') throw new TypeError('The "callback" argument must be of type function');
    queueMicrotask(() => callback(...args));
  },
  cwd: (): string => '/',
  umask: (): number => 0o22,
  hrtime,
  uptime: (): number => performance.now() / 1000,
  emitWarning: (): void => undefined,
  chdir: unavailable('chdir'),
  exit: unavailable('exit'),
  abort: unavailable('abort'),
  kill: unavailable('kill'),
  binding: unavailable('binding'),
  dlopen: unavailable('dlopen'),
  // Event subscriptions on the process (exit, uncaughtException...) are accepted and never fire.
  on: returnThis,
  addListener: returnThis,
  once: returnThis,
  off: returnThis,
  removeListener: returnThis,
  removeAllListeners: returnThis,
  prependListener: returnThis,
  prependOnceListener: returnThis,
  emit: (): boolean => false,
  listeners: (): AnyFunction[] => [],
  listenerCount: (): number => 0,
};

export = process;
