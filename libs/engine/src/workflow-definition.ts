import {
  checkStepReferences, isExactReference, STEP_NAME, validateTimer, WorkflowSettings, WorkflowTrigger,
} from '@app/domain';
import type { FieldError } from './engine-errors';

/** A step as the API takes it (`key` may be `key@version`). */
export interface WorkflowStepInput {
  name: string;
  key?: string;
  component_id?: string;
  component_code?: string;
  configured_props: Record<string, unknown>;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The API's trigger (`{type: "http", custom_response?}` ...) as stored, or the errors naming its fields. */
export function parseTrigger(raw: unknown, errors: FieldError[]): WorkflowTrigger | undefined {
  if (!isObject(raw)) {
    errors.push({ field: 'trigger', message: 'is required: {type: "http" | "timer" | "emitter" | "manual", ...}' });
    return undefined;
  }
  switch (raw.type) {
    case 'http':
      if (raw.custom_response !== undefined && typeof raw.custom_response !== 'boolean') {
        errors.push({ field: 'trigger.custom_response', message: 'must be a boolean' });
      }
      return { type: 'http', customResponse: raw.custom_response === true };
    case 'timer': {
      const checked = validateTimer(raw, 'trigger');
      if (!checked.timer) {
        errors.push(...checked.errors);
        return undefined;
      }
      const t = checked.timer;
      return t.cron !== undefined ? { type: 'timer', cron: t.cron, ...(t.timezone ? { timezone: t.timezone } : {}) } : { type: 'timer', intervalSeconds: t.intervalSeconds };
    }
    case 'emitter':
      if (typeof raw.emitter_id !== 'string' || raw.emitter_id === '') {
        errors.push({ field: 'trigger.emitter_id', message: 'is required: a source (dc_...) or workflow (p_...) id' });
        return undefined;
      }
      if (raw.event_name !== undefined && typeof raw.event_name !== 'string') {
        errors.push({ field: 'trigger.event_name', message: 'must be a string' });
        return undefined;
      }
      return { type: 'emitter', emitterId: raw.emitter_id, eventName: (raw.event_name as string | undefined) ?? '' };
    case 'manual':
      return { type: 'manual' };
    default:
      errors.push({ field: 'trigger.type', message: 'must be one of "http", "timer", "emitter", "manual"' });
      return undefined;
  }
}

/** The settings with their defaults (concurrency 1). */
export function parseSettings(raw: unknown, errors: FieldError[]): WorkflowSettings {
  const settings: WorkflowSettings = { concurrency: 1 };
  if (raw === undefined || raw === null) return settings;
  if (!isObject(raw)) {
    errors.push({ field: 'settings', message: 'must be an object {concurrency?, timeout_seconds?}' });
    return settings;
  }
  if (raw.concurrency !== undefined) {
    const c = raw.concurrency;
    if (typeof c !== 'number' || !Number.isSafeInteger(c) || c < 1 || c > 100) errors.push({ field: 'settings.concurrency', message: 'must be an integer from 1 to 100' });
    else settings.concurrency = c;
  }
  if (raw.timeout_seconds !== undefined && raw.timeout_seconds !== null) {
    const t = raw.timeout_seconds;
    if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0 || t > 86_400) errors.push({ field: 'settings.timeout_seconds', message: 'must be a number of seconds from 1 to 86400' });
    else settings.timeoutSeconds = t;
  }
  return settings;
}

/**
 * The steps' shape and names (unique identifiers, not `trigger`), exactly one component
 * reference each, and their references (to the trigger or an earlier step only).
 */
export function parseSteps(raw: unknown, errors: FieldError[]): WorkflowStepInput[] {
  if (!Array.isArray(raw)) {
    errors.push({ field: 'steps', message: 'is required: an array of {name, key | component_id | component_code, configured_props}' });
    return [];
  }
  const out: WorkflowStepInput[] = [];
  const names: string[] = [];
  raw.forEach((s: unknown, i) => {
    const f = `steps[${i}]`;
    if (!isObject(s)) {
      errors.push({ field: f, message: 'must be an object' });
      return;
    }
    const name = s.name;
    if (typeof name !== 'string' || !STEP_NAME.test(name)) {
      errors.push({ field: `${f}.name`, message: 'must match [A-Za-z_][A-Za-z0-9_]*' });
      return;
    }
    if (name === 'trigger') errors.push({ field: `${f}.name`, message: '"trigger" is reserved for the trigger' });
    if (names.includes(name)) errors.push({ field: `${f}.name`, message: `"${name}" is used by an earlier step` });
    const refs = (['key', 'component_id', 'component_code'] as const).filter((k) => s[k] !== undefined && s[k] !== null && s[k] !== '');
    if (refs.length !== 1) errors.push({ field: f, message: 'needs exactly one of key, component_id, component_code' });
    for (const k of refs) if (typeof s[k] !== 'string') errors.push({ field: `${f}.${k}`, message: 'must be a string' });
    const props = s.configured_props ?? {};
    if (!isObject(props)) errors.push({ field: `${f}.configured_props`, message: 'must be an object' });
    else errors.push(...checkStepReferences(props, names, `${f}.configured_props`));
    out.push({
      name,
      key: s.key as string | undefined,
      component_id: s.component_id as string | undefined,
      component_code: s.component_code as string | undefined,
      configured_props: isObject(props) ? props : {},
    });
    names.push(name);
  });
  return out;
}

/** Props to validate against the component: exact references are typed only at run time, so they are left out. */
export function propsWithoutReferences(props: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(props).filter(([, v]) => !isExactReference(v)));
}
