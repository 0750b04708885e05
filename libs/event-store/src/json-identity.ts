/** Nesting deeper than this is not walked: such data is parsed from its text instead. */
const MAX_DEPTH = 32;

/**
 * True when reading `value` gives what reading `JSON.parse(JSON.stringify(value))` gives: null,
 * booleans, strings, finite numbers other than -0, and arrays and objects of such values that are
 * plain (the prototype JSON.parse gives them), arrays without holes or `undefined`, objects
 * without `undefined` values. What it does not look for, as no event data of ours has them: own
 * accessors, and own properties of an array that are not its elements. A Date, a Map, a class
 * instance, NaN or Infinity, a function, or nesting past {@link MAX_DEPTH} make it false.
 *
 * The inline fold reads an appended event's data from the object it was written from when this
 * holds, instead of parsing the text it was just written as (see {@link LazyLogEvent}).
 */
export function readsAsItsJson(value: unknown, depth = 0): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      // Finite, and not -0 (which JSON writes as 0).
      return value - value === 0 && (value !== 0 || 1 / value > 0);
    case 'object': {
      if (value === null) return true;
      if (depth >= MAX_DEPTH) return false;
      const proto = Object.getPrototypeOf(value);
      if (proto === Array.prototype) {
        const items = value as unknown[];
        for (let i = 0; i < items.length; i++) {
          // A hole reads as undefined too, where JSON has null.
          if (items[i] === undefined || !readsAsItsJson(items[i], depth + 1)) return false;
        }
        return true;
      }
      if (proto !== Object.prototype) return false;
      const fields = value as Record<string, unknown>;
      for (const key in fields) {
        const v = fields[key];
        if (v === undefined || !readsAsItsJson(v, depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}
