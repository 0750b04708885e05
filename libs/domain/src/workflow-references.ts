import type { FieldError } from './component-definition';

/*
 * Step prop references (API.md "Actions and workflows"): `{{steps.trigger.event.x}}`,
 * `{{steps.<earlier>.$return_value.y}}`, `{{steps.<earlier>.<export>.z}}`. They are data paths,
 * looked up key by key in plain data, never evaluated: no expression, call or index syntax.
 */

/** `{{ steps.a.b[0].c }}` (spaces allowed inside the braces). */
const REFERENCE = /\{\{\s*(steps(?:\.[A-Za-z_$][A-Za-z0-9_$-]*|\[\d+\])+)\s*\}\}/g;
const EXACT = /^\{\{\s*(steps(?:\.[A-Za-z_$][A-Za-z0-9_$-]*|\[\d+\])+)\s*\}\}$/;

/** A step name: an identifier, not `trigger`. */
export const STEP_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The keys of a path (`steps.a.b[0]` -> `['steps', 'a', 'b', '0']`). */
function pathKeys(path: string): string[] {
  return path.replace(/\[(\d+)\]/g, '.$1').split('.');
}

/** The reference paths inside a string. */
function referencesIn(text: string): string[] {
  return [...text.matchAll(REFERENCE)].map((m) => m[1]);
}

/** Every string inside a value (props can be objects and arrays), with where it is. */
function* stringsIn(value: unknown, field: string): Generator<{ text: string; field: string }> {
  if (typeof value === 'string') yield { text: value, field };
  else if (Array.isArray(value)) for (let i = 0; i < value.length; i++) yield* stringsIn(value[i], `${field}[${i}]`);
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) yield* stringsIn(v, `${field}.${k}`);
}

/** Whether a prop value is exactly one reference (it then takes the referenced value with its type). */
export function isExactReference(value: unknown): boolean {
  return typeof value === 'string' && EXACT.test(value);
}

/**
 * Checks the references of one step's props: each must name `trigger` or a step before it.
 * `field` prefixes each error (`steps[2].configured_props`).
 */
export function checkStepReferences(props: Record<string, unknown>, earlier: string[], field: string): FieldError[] {
  const errors: FieldError[] = [];
  for (const { text, field: at } of stringsIn(props, field)) {
    for (const path of referencesIn(text)) {
      const [, step] = pathKeys(path);
      if (step === 'trigger' || earlier.includes(step)) continue;
      errors.push({ field: at, message: `refers to step "${step}", which is not an earlier step of this workflow (${path})` });
    }
  }
  return errors;
}

function lookup(root: unknown, keys: string[]): unknown {
  let cur: unknown = root;
  for (const k of keys) {
    if (cur === null || cur === undefined || typeof cur !== 'object') return undefined;
    // Own keys only: a path never reaches a prototype.
    if (!Object.prototype.hasOwnProperty.call(cur, k)) return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

function asText(v: unknown): string {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * Replaces references in props by what `steps` holds: an exact reference takes the value as is
 * (typed), references inside a longer string are interpolated as text (objects as JSON,
 * missing values as the empty string). Other values are returned unchanged.
 */
export function resolveReferences<T>(value: T, steps: Record<string, unknown>): T {
  const root = { steps };
  const visit = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const exact = EXACT.exec(v);
      if (exact) return lookup(root, pathKeys(exact[1]));
      if (!v.includes('{{')) return v;
      return v.replace(REFERENCE, (_m, path: string) => asText(lookup(root, pathKeys(path))));
    }
    if (Array.isArray(v)) return v.map(visit);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, visit(x)]));
    return v;
  };
  return visit(value) as T;
}
