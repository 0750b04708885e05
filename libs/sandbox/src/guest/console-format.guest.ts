import { jsonStringify } from './guest-intrinsics.guest';

const MAX_ITEMS = 100;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** Formats `console.*` arguments roughly as Node does (printf-style `%s %d %i %f %j %o %O %c %%`). */
export function formatLogArgs(args: unknown[]): string {
  const parts: string[] = [];
  let next = 0;
  if (typeof args[0] === 'string') {
    const format = args[0];
    next = 1;
    if (args.length > 1 && format.includes('%')) {
      parts.push(
        format.replace(/%[sdifjoOc%]/g, (spec) => {
          if (spec === '%%') return '%';
          if (next >= args.length) return spec;
          const arg = args[next++];
          switch (spec) {
            case '%s':
              return typeof arg === 'string' ? arg : typeof arg === 'bigint' ? `${arg}n` : inspect(arg, 1);
            case '%d':
            case '%i': {
              if (typeof arg === 'bigint') return `${arg}n`;
              const n = Number(arg);
              return String(spec === '%i' ? Math.trunc(n) : n);
            }
            case '%f':
              return String(parseFloat(String(arg)));
            case '%j':
              try {
                return String(jsonStringify(arg));
              } catch {
                return '[Circular]';
              }
            case '%c':
              return '';
            default:
              return inspect(arg, 4);
          }
        }),
      );
    } else parts.push(format);
  }
  for (let i = next; i < args.length; i++) {
    const arg = args[i];
    parts.push(typeof arg === 'string' ? arg : inspect(arg, 2));
  }
  return parts.join(' ');
}

/** A one-line, Node-like rendering of any value; never throws and never recurses past `depth`. */
export function inspect(value: unknown, depth: number): string {
  try {
    return render(value, depth, []);
  } catch {
    return '[Uninspectable]';
  }
}

function render(value: unknown, depth: number, seen: object[]): string {
  switch (typeof value) {
    case 'string':
      return seen.length === 0 ? value : `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
    case 'number':
      return Object.is(value, -0) ? '-0' : String(value);
    case 'bigint':
      return `${value}n`;
    case 'symbol':
      return value.toString();
    case 'undefined':
      return 'undefined';
    case 'boolean':
      return String(value);
    case 'function': {
      const name = (value as { name?: unknown }).name;
      const source = Function.prototype.toString.call(value);
      if (source.startsWith('class')) return `[class ${typeof name === 'string' && name ? name : '(anonymous)'}]`;
      return `[Function: ${typeof name === 'string' && name ? name : '(anonymous)'}]`;
    }
  }
  if (value === null) return 'null';
  const obj = value as object;
  if (seen.includes(obj)) return '[Circular]';
  if (obj instanceof Error) {
    const stack = (obj as { stack?: unknown }).stack;
    return typeof stack === 'string' && stack ? stack : `${obj.name}: ${obj.message}`;
  }
  if (obj instanceof Date) return Number.isNaN(obj.getTime()) ? 'Invalid Date' : obj.toISOString();
  if (obj instanceof RegExp) return String(obj);
  if (obj instanceof Promise) return 'Promise { <unknown> }';
  if (obj instanceof WeakMap) return 'WeakMap { <items unknown> }';
  if (obj instanceof WeakSet) return 'WeakSet { <items unknown> }';
  const inner = [...seen, obj];
  if (Array.isArray(obj)) {
    if (depth < 0) return '[Array]';
    const items = obj.slice(0, MAX_ITEMS).map((v) => render(v, depth - 1, inner));
    if (obj.length > MAX_ITEMS) items.push(`... ${obj.length - MAX_ITEMS} more items`);
    return items.length ? `[ ${items.join(', ')} ]` : '[]';
  }
  if (ArrayBuffer.isView(obj) && !(obj instanceof DataView)) {
    const arr = obj as unknown as ArrayLike<number | bigint> & { constructor: { name: string } };
    const items: string[] = [];
    for (let i = 0; i < Math.min(arr.length, MAX_ITEMS); i++) items.push(render(arr[i], 0, inner));
    if (arr.length > MAX_ITEMS) items.push(`... ${arr.length - MAX_ITEMS} more items`);
    return `${arr.constructor.name}(${arr.length}) [ ${items.join(', ')} ]`;
  }
  if (obj instanceof ArrayBuffer) return `ArrayBuffer { byteLength: ${obj.byteLength} }`;
  if (obj instanceof Map) {
    if (depth < 0) return '[Map]';
    const items: string[] = [];
    for (const [k, v] of obj) {
      if (items.length >= MAX_ITEMS) break;
      items.push(`${render(k, depth - 1, inner)} => ${render(v, depth - 1, inner)}`);
    }
    return `Map(${obj.size}) {${items.length ? ` ${items.join(', ')} ` : ''}}`;
  }
  if (obj instanceof Set) {
    if (depth < 0) return '[Set]';
    const items: string[] = [];
    for (const v of obj) {
      if (items.length >= MAX_ITEMS) break;
      items.push(render(v, depth - 1, inner));
    }
    return `Set(${obj.size}) {${items.length ? ` ${items.join(', ')} ` : ''}}`;
  }
  const proto = Object.getPrototypeOf(obj);
  const ctorName = proto === null ? '[Object: null prototype]' : typeof proto.constructor === 'function' ? proto.constructor.name : '';
  const prefix = ctorName && ctorName !== 'Object' ? `${ctorName} ` : '';
  if (depth < 0) return `[${ctorName || 'Object'}]`;
  const keys = Object.keys(obj);
  const items: string[] = [];
  for (const key of keys.slice(0, MAX_ITEMS)) {
    let rendered: string;
    try {
      rendered = render((obj as Record<string, unknown>)[key], depth - 1, inner);
    } catch {
      rendered = '[Getter threw]';
    }
    items.push(`${IDENTIFIER.test(key) ? key : `'${key}'`}: ${rendered}`);
  }
  if (keys.length > MAX_ITEMS) items.push(`... ${keys.length - MAX_ITEMS} more items`);
  return items.length ? `${prefix}{ ${items.join(', ')} }` : `${prefix}{}`;
}
