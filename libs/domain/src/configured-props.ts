import { baseType, FieldError } from './component-definition';
import type { PropDefinition, StoredProps } from './events';
import { checkHttpRequestValue, hideHttpRequestAuth, openHttpRequestAuth, sealHttpRequestValue } from './http-request-prop';
import { SecretBox } from './secret-box';
import { validateTimer } from './timer-config';

export const MAX_PROP_VALUE_BYTES = 64 * 1024;

/**
 * Validates user-supplied configured props against the component's props and returns the values
 * to store: defaults applied, secret strings sealed, interface and service props excluded
 * (they are wired by the server). Unknown props are errors so typos are caught.
 */
export function validateConfiguredProps(
  props: PropDefinition[],
  given: Record<string, unknown> | undefined,
  box: SecretBox,
  previous?: StoredProps,
): { values: StoredProps; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const values: StoredProps = {};
  const input = given ?? {};
  const known = new Set(props.map((p) => p.name));
  for (const k of Object.keys(input)) {
    if (!known.has(k)) errors.push({ field: `configured_props.${k}`, message: 'is not a prop of this component' });
  }
  for (const p of props) {
    const f = `configured_props.${p.name}`;
    const { base, array } = baseType(p.type);
    if (base === '$.interface.http' || base === '$.service.db' || base === 'app') continue;
    if (base === '$.interface.timer') {
      const v = input[p.name] ?? previous?.[p.name] ?? p.default;
      if (v !== undefined) {
        const checked = validateTimer(v, f);
        if (checked.errors.length) errors.push(...checked.errors);
        else values[p.name] = checked.timer;
      }
      continue;
    }
    let v = input[p.name];
    if (v === undefined && previous && previous[p.name] !== undefined) {
      values[p.name] = previous[p.name];
      continue;
    }
    if (v === undefined) v = p.default;
    if (v === undefined || v === null) {
      if (!p.optional) errors.push({ field: f, message: 'is required' });
      continue;
    }
    const size = Buffer.byteLength(typeof v === 'string' ? v : JSON.stringify(v));
    if (size > MAX_PROP_VALUE_BYTES) {
      errors.push({ field: f, message: `is ${size} bytes; a configured value may be at most 64 KB` });
      continue;
    }
    const items = array ? (Array.isArray(v) ? v : null) : [v];
    if (items === null) {
      errors.push({ field: f, message: `must be an array of ${base}` });
      continue;
    }
    let bad = false;
    for (const item of items) {
      const msg = checkScalar(base, item, p);
      if (msg) {
        errors.push({ field: f, message: msg });
        bad = true;
        break;
      }
    }
    if (bad) continue;
    if (base === 'http_request') values[p.name] = sealHttpRequestValue(v as Record<string, unknown>, box);
    else values[p.name] = p.secret && typeof v === 'string' ? box.seal(v) : v;
  }
  return { values, errors };
}

function checkScalar(base: string, v: unknown, p: PropDefinition): string | undefined {
  switch (base) {
    case 'string':
      if (typeof v !== 'string') return 'must be a string';
      break;
    case 'boolean':
      if (typeof v !== 'boolean') return 'must be a boolean';
      break;
    case 'integer':
      if (typeof v !== 'number' || !Number.isInteger(v)) return 'must be an integer';
      if (typeof p.min === 'number' && v < p.min) return `must be at least ${p.min}`;
      if (typeof p.max === 'number' && v > p.max) return `must be at most ${p.max}`;
      break;
    case 'object':
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'must be an object';
      break;
    case 'http_request':
      return checkHttpRequestValue(v);
    default:
      break;
  }
  if (Array.isArray(p.options) && p.options.length > 0) {
    const allowed = p.options.map((o) => (typeof o === 'object' && o !== null && 'value' in o ? (o as { value: unknown }).value : o));
    if (!allowed.some((a) => a === v)) return `must be one of the prop's options (${allowed.map((a) => JSON.stringify(a)).join(', ')})`;
  }
  return undefined;
}

/** Configured props as the API returns them: secret values (and `http_request` credentials) left out. */
export function publicProps(values: StoredProps): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) {
    if (SecretBox.isSealed(v)) continue;
    out[k] = hideHttpRequestAuth(v);
  }
  return out;
}

/** Configured props as the run sees them: secrets (and `http_request` credentials) opened. */
export function runtimeProps(values: StoredProps, box: SecretBox): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) out[k] = SecretBox.isSealed(v) ? box.open(v) : openHttpRequestAuth(v, box);
  return out;
}
