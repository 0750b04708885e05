// A stand-in for Node's `process`, given only to packages that import it or use the `process`
// global: the guest itself has no `process`. Modelled on the browser stubs bundlers have long used
// (empty `version` and `versions`), so packages that sniff for Node take their non-Node paths.

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

const process = {
  title: 'sandbox',
  browser: true,
  env: {} as Record<string, string | undefined>,
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
