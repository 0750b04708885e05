// Node's `assert` for packages bundled into the sandbox (browserify-zlib, follow-redirects call it
// on every request). Hand-written and small: the npm `assert` package pulls in a util polyfill
// several times the size of this whole module. The comparisons follow Node's (`==` for the loose
// forms, `Object.is` for the strict ones, structural equality for the deep ones).

class AssertionError extends Error {
  readonly code = 'ERR_ASSERTION';
  readonly actual: unknown;
  readonly expected: unknown;
  readonly operator: string;
  readonly generatedMessage: boolean;

  constructor(options: { message?: unknown; actual?: unknown; expected?: unknown; operator?: string }) {
    const generated = options.message === undefined;
    super(generated ? `${String(options.actual)} ${options.operator ?? '=='} ${String(options.expected)}` : String(options.message));
    this.name = 'AssertionError';
    this.actual = options.actual;
    this.expected = options.expected;
    this.operator = options.operator ?? '==';
    this.generatedMessage = generated;
  }
}

function fail(message: unknown, actual: unknown, expected: unknown, operator: string): never {
  if (message instanceof Error) throw message;
  throw new AssertionError({ message, actual, expected, operator });
}

function deepEqual(a: unknown, b: unknown, strict: boolean, seen = new Map<unknown, unknown>()): boolean {
  if (strict ? Object.is(a, b) : a == b || (Number.isNaN(a) && Number.isNaN(b))) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (strict && Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (seen.get(a) === b) return true;
  seen.set(a, b);
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  if (a instanceof RegExp && b instanceof RegExp) return String(a) === String(b);
  if (ArrayBuffer.isView(a) && ArrayBuffer.isView(b)) {
    const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    return x.length === y.length && x.every((v, i) => v === y[i]);
  }
  if (a instanceof Map && b instanceof Map) {
    if (a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !deepEqual(v, b.get(k), strict, seen)) return false;
    return true;
  }
  if (a instanceof Set && b instanceof Set) return a.size === b.size && [...a].every((v) => b.has(v));
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], strict, seen));
}

function ok(value: unknown, message?: unknown): void {
  if (!value) fail(message ?? 'The expression evaluated to a falsy value', value, true, '==');
}

function throwsCheck(block: unknown, expected: unknown, message: unknown): void {
  if (typeof block !== 'function') throw new TypeError('The "fn" argument must be of type function');
  try {
    block();
  } catch (error) {
    if (typeof expected === 'function' && expected.prototype !== undefined && !(error instanceof (expected as new () => unknown))) throw error;
    if (expected instanceof RegExp && !expected.test(String(error))) fail(message, error, expected, 'throws');
    return;
  }
  fail(typeof expected === 'string' ? expected : message ?? 'Missing expected exception.', undefined, expected, 'throws');
}

const assert = Object.assign((value: unknown, message?: unknown) => ok(value, message), {
  AssertionError,
  ok,
  fail: (message?: unknown): never => fail(message ?? 'Failed', undefined, undefined, 'fail'),
  equal: (a: unknown, b: unknown, message?: unknown) => (a == b || (Number.isNaN(a) && Number.isNaN(b)) ? undefined : fail(message, a, b, '==')),
  notEqual: (a: unknown, b: unknown, message?: unknown) => (a != b ? undefined : fail(message, a, b, '!=')),
  strictEqual: (a: unknown, b: unknown, message?: unknown) => (Object.is(a, b) ? undefined : fail(message, a, b, 'strictEqual')),
  notStrictEqual: (a: unknown, b: unknown, message?: unknown) => (!Object.is(a, b) ? undefined : fail(message, a, b, 'notStrictEqual')),
  deepEqual: (a: unknown, b: unknown, message?: unknown) => (deepEqual(a, b, false) ? undefined : fail(message, a, b, 'deepEqual')),
  deepStrictEqual: (a: unknown, b: unknown, message?: unknown) => (deepEqual(a, b, true) ? undefined : fail(message, a, b, 'deepStrictEqual')),
  notDeepEqual: (a: unknown, b: unknown, message?: unknown) => (!deepEqual(a, b, false) ? undefined : fail(message, a, b, 'notDeepEqual')),
  notDeepStrictEqual: (a: unknown, b: unknown, message?: unknown) => (!deepEqual(a, b, true) ? undefined : fail(message, a, b, 'notDeepStrictEqual')),
  throws: (block: unknown, expected?: unknown, message?: unknown) => throwsCheck(block, expected, message),
  ifError: (value: unknown) => {
    if (value !== null && value !== undefined) throw value;
  },
  match: (text: string, pattern: RegExp, message?: unknown) => (pattern.test(text) ? undefined : fail(message, text, pattern, 'match')),
});

Object.assign(assert, { strict: assert });

export = assert;
