import { DOMException } from './web-events.guest';

type TypedArrayConstructor = new (buffer: ArrayBuffer, byteOffset: number, length: number) => ArrayBufferView;

const ERRORS: Record<string, ErrorConstructor> = {
  Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError,
};

/** The web structuredClone (no transfer list): functions, symbols, promises and weak collections throw DataCloneError. */
export function structuredClone<T>(value: T): T {
  return cloneValue(value, new Map()) as T;
}

function uncloneable(what: string): never {
  throw new DOMException(`${what} could not be cloned.`, 'DataCloneError');
}

function cloneValue(value: unknown, memo: Map<object, unknown>): unknown {
  if (typeof value === 'function') uncloneable(String((value as { name?: string }).name || 'function'));
  if (typeof value === 'symbol') uncloneable(value.toString());
  if (typeof value !== 'object' || value === null) return value;
  const known = memo.get(value);
  if (known !== undefined) return known;
  if (value instanceof Date) return remember(memo, value, new Date(value.getTime()));
  if (value instanceof RegExp) return remember(memo, value, new RegExp(value.source, value.flags));
  if (value instanceof Boolean || value instanceof Number || value instanceof String) {
    return remember(memo, value, Object(value.valueOf()));
  }
  if (value instanceof ArrayBuffer) return remember(memo, value, value.slice(0));
  if (value instanceof DataView) {
    return remember(memo, value, new DataView(cloneValue(value.buffer, memo) as ArrayBuffer, value.byteOffset, value.byteLength));
  }
  if (ArrayBuffer.isView(value)) {
    const typed = value as ArrayBufferView & { length: number; constructor: TypedArrayConstructor };
    const buffer = cloneValue(typed.buffer, memo) as ArrayBuffer;
    return remember(memo, value, new typed.constructor(buffer, typed.byteOffset, typed.length));
  }
  if (value instanceof Map) {
    const out = remember(memo, value, new Map());
    for (const [k, v] of value) out.set(cloneValue(k, memo), cloneValue(v, memo));
    return out;
  }
  if (value instanceof Set) {
    const out = remember(memo, value, new Set());
    for (const v of value) out.add(cloneValue(v, memo));
    return out;
  }
  if (value instanceof Error) {
    const ctor = ERRORS[value.name] ?? Error;
    const out = remember(memo, value, new ctor(value.message));
    if (typeof value.stack === 'string') out.stack = value.stack;
    if ('cause' in value) (out as { cause?: unknown }).cause = cloneValue(value.cause, memo);
    return out;
  }
  if (value instanceof Promise || value instanceof WeakMap || value instanceof WeakSet) {
    uncloneable(`#<${value.constructor.name}>`);
  }
  const out: Record<string, unknown> = remember(memo, value, Array.isArray(value) ? new Array(value.length) : {});
  for (const key of Object.keys(value)) out[key] = cloneValue((value as Record<string, unknown>)[key], memo);
  return out;
}

function remember<T>(memo: Map<object, unknown>, source: object, copy: T): T {
  memo.set(source, copy);
  return copy;
}
