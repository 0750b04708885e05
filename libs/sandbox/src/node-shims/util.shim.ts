// Node's `util` for packages bundled into the sandbox: the parts popular packages call. format and
// inspect reuse the guest console's formatter so logs and util output look the same.
//
// Kept hand-written rather than the `util` package (0.12.5, checked against node-shims.spec.ts):
// its `promisify.custom` is its own symbol, not Node's `Symbol.for('nodejs.util.promisify.custom')`
// that packages set; `format('100%% sure')` gives "100% sure" (Node leaves it alone); it has no
// `isDeepStrictEqual` nor `TextEncoder`; and it installs 33 packages, 85.5 kB bundled against
// this file's 15.0 kB (esbuild --bundle --platform=browser, unminified).
import consoleFormat = require('../guest/console-format.guest');

type AnyFunction = (...args: unknown[]) => unknown;

const PROMISIFY_CUSTOM = Symbol.for('nodejs.util.promisify.custom');
const INSPECT_CUSTOM = Symbol.for('nodejs.util.inspect.custom');
const tag = (value: unknown): string => Object.prototype.toString.call(value).slice(8, -1);

function inherits(ctor: AnyFunction, superCtor: AnyFunction): void {
  if (typeof ctor !== 'function' || typeof superCtor !== 'function' || superCtor.prototype === undefined) {
    throw new TypeError('The "ctor" and "superCtor" arguments must be functions with a prototype');
  }
  Object.defineProperty(ctor, 'super_', { value: superCtor, writable: true, configurable: true });
  Object.setPrototypeOf(ctor.prototype, superCtor.prototype);
}

function promisify(original: AnyFunction): AnyFunction {
  if (typeof original !== 'function') throw new TypeError('The "original" argument must be of type function');
  const custom = (original as unknown as Record<symbol, unknown>)[PROMISIFY_CUSTOM];
  if (typeof custom === 'function') return custom as AnyFunction;
  function promisified(this: unknown, ...args: unknown[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      original.call(this, ...args, (error: unknown, value: unknown) => (error ? reject(error) : resolve(value)));
    });
  }
  Object.setPrototypeOf(promisified, Object.getPrototypeOf(original));
  Object.defineProperty(promisified, PROMISIFY_CUSTOM, { value: promisified, configurable: true });
  return promisified;
}
promisify.custom = PROMISIFY_CUSTOM;

function callbackify(original: (...args: unknown[]) => Promise<unknown>): AnyFunction {
  if (typeof original !== 'function') throw new TypeError('The "original" argument must be of type function');
  return function (this: unknown, ...args: unknown[]): void {
    const callback = args.pop();
    if (typeof callback !== 'function') throw new TypeError('The last argument must be of type function');
    original.apply(this, args).then(
      (value) => queueMicrotask(() => callback(null, value)),
      (reason: unknown) => {
        const error = reason || Object.assign(new Error('Promise was rejected with a falsy value'), { reason });
        queueMicrotask(() => callback(error));
      },
    );
  };
}

function inspect(value: unknown, options?: { depth?: number | null } | boolean): string {
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
  const custom = value !== null && typeof value === 'object' ? (value as Record<symbol, unknown>)[INSPECT_CUSTOM] : undefined;
  if (typeof custom === 'function') {
    const out = custom.call(value, 2, {}, inspect);
    if (typeof out === 'string') return out;
  }
  const depth = typeof options === 'object' && options !== null && options.depth !== undefined ? (options.depth === null ? 100 : options.depth) : 2;
  return consoleFormat.inspect(value, depth);
}
inspect.custom = INSPECT_CUSTOM;
inspect.defaultOptions = { depth: 2 };

function deprecate<T extends AnyFunction>(fn: T, message: string): T {
  let warned = false;
  return function (this: unknown, ...args: unknown[]): unknown {
    if (!warned) {
      warned = true;
      console.warn(`DeprecationWarning: ${message}`);
    }
    return fn.apply(this, args);
  } as T;
}

function debuglog(): AnyFunction & { enabled: boolean } {
  return Object.assign(() => undefined, { enabled: false });
}

const types = {
  isDate: (v: unknown): boolean => tag(v) === 'Date',
  isRegExp: (v: unknown): boolean => tag(v) === 'RegExp',
  isMap: (v: unknown): boolean => tag(v) === 'Map',
  isSet: (v: unknown): boolean => tag(v) === 'Set',
  isWeakMap: (v: unknown): boolean => tag(v) === 'WeakMap',
  isWeakSet: (v: unknown): boolean => tag(v) === 'WeakSet',
  isPromise: (v: unknown): boolean => tag(v) === 'Promise',
  isNativeError: (v: unknown): boolean => v instanceof Error || tag(v) === 'Error',
  isArrayBuffer: (v: unknown): boolean => tag(v) === 'ArrayBuffer',
  isAnyArrayBuffer: (v: unknown): boolean => tag(v) === 'ArrayBuffer' || tag(v) === 'SharedArrayBuffer',
  isArrayBufferView: (v: unknown): boolean => ArrayBuffer.isView(v),
  isDataView: (v: unknown): boolean => tag(v) === 'DataView',
  isTypedArray: (v: unknown): boolean => ArrayBuffer.isView(v) && tag(v) !== 'DataView',
  isUint8Array: (v: unknown): boolean => tag(v) === 'Uint8Array',
  isAsyncFunction: (v: unknown): boolean => tag(v) === 'AsyncFunction' || tag(v) === 'AsyncGeneratorFunction',
  isGeneratorFunction: (v: unknown): boolean => tag(v) === 'GeneratorFunction' || tag(v) === 'AsyncGeneratorFunction',
  isGeneratorObject: (v: unknown): boolean => tag(v) === 'Generator',
  isBoxedPrimitive: (v: unknown): boolean => v !== null && typeof v === 'object' && ['Number', 'String', 'Boolean', 'BigInt', 'Symbol'].includes(tag(v)),
  isSymbolObject: (v: unknown): boolean => v !== null && typeof v === 'object' && tag(v) === 'Symbol',
};

function isDeepStrictEqual(a: unknown, b: unknown, seen = new Map<object, object>()): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b) || tag(a) !== tag(b)) return false;
  if (seen.get(a) === b) return true;
  seen.set(a, b);
  if (a instanceof Date) return a.getTime() === (b as Date).getTime();
  if (a instanceof RegExp) return String(a) === String(b);
  if (ArrayBuffer.isView(a)) {
    const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const y = new Uint8Array((b as ArrayBufferView).buffer, (b as ArrayBufferView).byteOffset, (b as ArrayBufferView).byteLength);
    return x.length === y.length && x.every((v, i) => v === y[i]);
  }
  if (a instanceof Map) {
    const m = b as Map<unknown, unknown>;
    return a.size === m.size && [...a].every(([k, v]) => m.has(k) && isDeepStrictEqual(v, m.get(k), seen));
  }
  if (a instanceof Set) return a.size === (b as Set<unknown>).size && [...a].every((v) => (b as Set<unknown>).has(v));
  const ka = Reflect.ownKeys(a).filter((k) => Object.prototype.propertyIsEnumerable.call(a, k));
  const kb = Reflect.ownKeys(b).filter((k) => Object.prototype.propertyIsEnumerable.call(b, k));
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) &&
    isDeepStrictEqual((a as Record<PropertyKey, unknown>)[k], (b as Record<PropertyKey, unknown>)[k], seen));
}

export = {
  inherits,
  promisify,
  callbackify,
  format: (...args: unknown[]): string => consoleFormat.formatLogArgs(args),
  inspect,
  deprecate,
  debuglog,
  debug: debuglog,
  isDeepStrictEqual: (a: unknown, b: unknown): boolean => isDeepStrictEqual(a, b),
  types,
  TextEncoder: globalThis.TextEncoder,
  TextDecoder: globalThis.TextDecoder,
  isArray: Array.isArray,
  isBoolean: (v: unknown): boolean => typeof v === 'boolean',
  isNull: (v: unknown): boolean => v === null,
  isNullOrUndefined: (v: unknown): boolean => v === null || v === undefined,
  isNumber: (v: unknown): boolean => typeof v === 'number',
  isString: (v: unknown): boolean => typeof v === 'string',
  isSymbol: (v: unknown): boolean => typeof v === 'symbol',
  isUndefined: (v: unknown): boolean => v === undefined,
  isObject: (v: unknown): boolean => v !== null && typeof v === 'object',
  isFunction: (v: unknown): boolean => typeof v === 'function',
  isPrimitive: (v: unknown): boolean => v === null || (typeof v !== 'object' && typeof v !== 'function'),
  isDate: types.isDate,
  isRegExp: types.isRegExp,
  isError: types.isNativeError,
  isBuffer: (v: unknown): boolean => v instanceof Uint8Array && (v.constructor as { isBuffer?: (x: unknown) => boolean }).isBuffer?.(v) === true,
};
