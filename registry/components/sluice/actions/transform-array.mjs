import { valueAt } from "../common/values.mjs";

/** A stable key for comparing items: the value at `path`, as JSON so objects compare by content. */
function keyOf(item, path) {
  return JSON.stringify(valueAt(item, path) ?? null);
}

function compare(a, b) {
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a ?? "").localeCompare(String(b ?? ""));
}

const OPERATIONS = {
  unique: (arr, o) => {
    const seen = new Set();
    return arr.filter((x) => {
      const k = keyOf(x, o.path);
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
  },
  sort: (arr, o) => {
    const sorted = [...arr].sort((a, b) => compare(valueAt(a, o.path), valueAt(b, o.path)));
    return o.descending ? sorted.reverse() : sorted;
  },
  reverse: (arr) => [...arr].reverse(),
  flatten: (arr) => arr.flat(),
  compact: (arr) => arr.filter((x) => x !== null && x !== undefined && x !== "" && x !== false),
  pluck: (arr, o) => arr.map((x) => valueAt(x, o.path) ?? null),
  chunk: (arr, o) => {
    const out = [];
    for (let i = 0; i < arr.length; i += o.size) out.push(arr.slice(i, i + o.size));
    return out;
  },
  first: (arr, o) => arr.slice(0, o.size),
  last: (arr, o) => arr.slice(Math.max(0, arr.length - o.size)),
  length: (arr) => arr.length,
  join: (arr, o) => arr.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(o.separator),
};

export default {
  key: "sluice-transform-array",
  name: "Transform Array",
  description: "Applies one operation to an array: unique, sort, reverse, flatten, compact, pluck a field, chunk, first or last N, length, join.",
  version: "1.0.0",
  type: "action",
  props: {
    array: { type: "any", label: "Array", description: "An array, usually a reference to an earlier step." },
    operation: {
      type: "string",
      label: "Operation",
      options: [
        { label: "Unique (by path, when given)", value: "unique" },
        { label: "Sort (by path, when given)", value: "sort" },
        { label: "Reverse", value: "reverse" },
        { label: "Flatten one level", value: "flatten" },
        { label: "Compact (drop null, empty and false)", value: "compact" },
        { label: "Pluck the value at path", value: "pluck" },
        { label: "Chunk into arrays of Size", value: "chunk" },
        { label: "First Size items", value: "first" },
        { label: "Last Size items", value: "last" },
        { label: "Length", value: "length" },
        { label: "Join with Separator", value: "join" },
      ],
    },
    path: {
      type: "string",
      label: "Path",
      description: "Dotted path inside each item (`user.email`) for Unique, Sort and Pluck; empty for the item itself.",
      optional: true,
      default: "",
    },
    size: { type: "integer", label: "Size", description: "For Chunk, First and Last.", optional: true, default: 1, min: 1 },
    separator: { type: "string", label: "Separator", description: "For Join.", optional: true, default: ", " },
    descending: { type: "boolean", label: "Descending", description: "For Sort.", optional: true, default: false },
  },
  async run({ $ }) {
    let array = this.array;
    if (typeof array === "string") {
      // A JSON text given by hand or by an interpolated reference.
      try {
        array = JSON.parse(array);
      } catch {
        // Not JSON: reported below.
      }
    }
    if (!Array.isArray(array)) throw new Error(`array must be an array, got ${array === null ? "null" : typeof array}`);
    const result = OPERATIONS[this.operation](array, {
      path: this.path ?? "", size: this.size ?? 1, separator: this.separator ?? ", ", descending: this.descending ?? false,
    });
    $.export("$summary", `${this.operation} of ${array.length} item${array.length === 1 ? "" : "s"}`);
    return result;
  },
};
