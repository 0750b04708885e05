import type { ComponentDefinition, PropDefinition } from './events';
import { validateTimer } from './timer-config';

/** One reason a definition or an input is invalid: which field and why. */
export interface FieldError {
  field: string;
  message: string;
}

/** The raw shape `describe` returns from the sandbox (functions removed). */
export interface RawDescription {
  name?: unknown; key?: unknown; version?: unknown; type?: unknown; description?: unknown; dedupe?: unknown;
  props: { name: string; type?: unknown; [k: string]: unknown }[];
  hooks: string[];
  methods: string[];
  hasRun: boolean;
  /** True when the definition has an `additionalProps` method (dynamic props). */
  hasAdditionalProps?: boolean;
}

const USER_TYPES = ['boolean', 'integer', 'string', 'object', 'any', 'app', 'http_request'];
const ARRAY_TYPES = ['boolean', 'integer', 'string'];
const SOURCE_ONLY = ['$.interface.http', '$.interface.timer', '$.service.db'];
const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/**
 * Resolves `propDefinition: [app, name, inputValues?]` (spec 2.5): the app's prop definition,
 * overridden by the prop's own properties. The stored prop keeps `[appSlug, name]` as a reference.
 */
function resolvePropDefinition(p: RawDescription['props'][number]): { prop: RawDescription['props'][number] } | { error: string } {
  const ref = p.propDefinition;
  if (ref === undefined) return { prop: p };
  if (!Array.isArray(ref) || ref.length < 2 || typeof ref[1] !== 'string') {
    return { error: 'must be [app, propDefinitionName, inputValues?]' };
  }
  const app = ref[0] as { type?: unknown; app?: unknown; propDefinitions?: Record<string, Record<string, unknown>> } | null;
  if (!app || typeof app !== 'object' || app.type !== 'app') return { error: 'its first element must be an app (an object with type "app")' };
  const def = app.propDefinitions?.[ref[1]];
  if (!def || typeof def !== 'object') return { error: `refers to "${ref[1]}", which app "${String(app.app)}" does not define` };
  const { propDefinition: _ignored, ...own } = p;
  void _ignored;
  return { prop: { ...def, ...own, name: p.name, propDefinition: [String(app.app), ref[1]] } };
}

/**
 * Validates props as described by the sandbox (static ones, or those `additionalProps()` added)
 * against spec 2.5: `propDefinition` resolved, types and their rules checked. Each error names
 * `props.<name>.<field>`; the props that could be resolved are returned in order, and they are
 * valid only when `errors` is empty.
 */
export function validateProps(raw: RawDescription['props'], isSource: boolean): { props: PropDefinition[]; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const props: PropDefinition[] = [];
  for (const original of raw) {
    const f = `props.${original.name}`;
    const resolved = resolvePropDefinition(original);
    if ('error' in resolved) {
      errors.push({ field: `${f}.propDefinition`, message: resolved.error });
      continue;
    }
    const p = resolved.prop;
    if (typeof p.type !== 'string' || p.type === '') {
      errors.push({ field: `${f}.type`, message: 'is required' });
      continue;
    }
    const { base, array } = baseType(p.type);
    if (!USER_TYPES.includes(base) && !SOURCE_ONLY.includes(base)) {
      errors.push({ field: `${f}.type`, message: `unknown prop type "${p.type}"` });
      continue;
    }
    if (array && !ARRAY_TYPES.includes(base)) errors.push({ field: `${f}.type`, message: `"${base}" does not support arrays` });
    // `$.service.db` in an action is accepted with a warning (definitionWarnings).
    if (SOURCE_ONLY.includes(base) && !isSource && base !== '$.service.db') errors.push({ field: `${f}.type`, message: `"${base}" is only allowed in sources` });
    if (base === 'any' && isSource) errors.push({ field: `${f}.type`, message: '"any" is only allowed in actions' });
    if (p.secret !== undefined && p.secret !== false && base !== 'string') {
      errors.push({ field: `${f}.secret`, message: 'is only allowed on string props' });
    }
    for (const k of ['min', 'max'] as const) {
      if (p[k] === undefined) continue;
      if (base !== 'integer') errors.push({ field: `${f}.${k}`, message: 'is only allowed on integer props' });
      else if (!Number.isInteger(p[k])) errors.push({ field: `${f}.${k}`, message: 'must be an integer' });
    }
    if (base === '$.interface.timer' && p.default !== undefined) {
      errors.push(...validateTimer(p.default, `${f}.default`).errors);
    }
    if (p.optional !== undefined && typeof p.optional !== 'boolean') errors.push({ field: `${f}.optional`, message: 'must be a boolean' });
    props.push({ ...(p as PropDefinition), type: p.type });
  }
  return { props, errors };
}

/** Base type of a prop type: `string[]` -> `string`. */
export function baseType(type: string): { base: string; array: boolean } {
  return type.endsWith('[]') ? { base: type.slice(0, -2), array: true } : { base: type, array: false };
}

/**
 * What the original service accepts beyond the spec's wording and registry components rely on
 * (COMPONENTS.md "Loading code"): accepted, with one warning each. A pure function of the
 * definition, so the API can show them whenever it shows the component or runs it.
 */
export function definitionWarnings(def: Pick<ComponentDefinition, 'type' | 'props'>): FieldError[] {
  const warnings: FieldError[] = [];
  for (const p of def.props) {
    const { base } = baseType(p.type);
    if (p.default !== undefined && !p.optional && !SOURCE_ONLY.includes(base)) {
      warnings.push({ field: `props.${p.name}.default`, message: 'is set on a prop that is not optional: accepted, the default satisfies it when no value is configured' });
    }
    if (base === '$.service.db' && def.type === 'action') {
      warnings.push({ field: `props.${p.name}.type`, message: '"$.service.db" in an action: accepted, each workflow step gets its own store (a run through /v1/actions/run a throwaway one)' });
    }
  }
  return warnings;
}

/**
 * Validates a component definition against spec 2.4 / 2.5 and returns the normalised
 * definition with its warnings (definitionWarnings), or the list of field errors. `publish`
 * requires a semver version.
 */
export function validateDefinition(
  raw: RawDescription,
  opts: { publish?: boolean } = {},
): { definition: ComponentDefinition; errors: []; warnings: FieldError[] } | { definition?: undefined; errors: FieldError[]; warnings?: undefined } {
  const errors: FieldError[] = [];
  const str = (v: unknown) => typeof v === 'string' && v.trim() !== '';
  if (!str(raw.name)) errors.push({ field: 'name', message: 'is required and must be a non-empty string' });
  if (!str(raw.version)) errors.push({ field: 'version', message: 'is required and must be a non-empty string' });
  else if (opts.publish && !SEMVER.test(String(raw.version))) {
    errors.push({ field: 'version', message: `must be a semantic version (x.y.z) to publish, got "${String(raw.version)}"` });
  }
  if (raw.key !== undefined && !str(raw.key)) errors.push({ field: 'key', message: 'must be a non-empty string' });
  if (raw.description !== undefined && typeof raw.description !== 'string') {
    errors.push({ field: 'description', message: 'must be a string' });
  }
  const type = raw.type === undefined ? 'source' : raw.type;
  if (type !== 'source' && type !== 'action') {
    errors.push({ field: 'type', message: `must be "source" or "action", got ${JSON.stringify(raw.type)}` });
  }
  const isSource = type !== 'action';
  if (raw.dedupe !== undefined) {
    if (!isSource) errors.push({ field: 'dedupe', message: 'is only allowed in sources' });
    else if (!['unique', 'greatest', 'last'].includes(String(raw.dedupe))) {
      errors.push({ field: 'dedupe', message: `must be one of unique, greatest, last; got ${JSON.stringify(raw.dedupe)}` });
    }
  }
  if (!isSource && raw.hooks.length > 0) errors.push({ field: 'hooks', message: 'are only allowed in sources' });
  for (const h of raw.hooks) {
    if (!['deploy', 'activate', 'deactivate'].includes(h)) {
      errors.push({ field: `hooks.${h}`, message: 'unknown hook; allowed: deploy, activate, deactivate' });
    }
  }

  const { props, errors: propErrors } = validateProps(raw.props, isSource);
  errors.push(...propErrors);
  if (!raw.hasRun && !(isSource && props.some((p) => p.type === '$.interface.timer'))) {
    errors.push({ field: 'run', message: 'is required (a run method)' });
  }
  if (errors.length) return { errors };
  const definition: ComponentDefinition = {
    name: String(raw.name),
    key: raw.key === undefined ? undefined : String(raw.key),
    version: String(raw.version),
    type: type as 'source' | 'action',
    description: typeof raw.description === 'string' ? raw.description : undefined,
    dedupe: raw.dedupe as ComponentDefinition['dedupe'],
    props,
    hooks: raw.hooks,
    methods: raw.methods,
    hasRun: raw.hasRun,
    // Only when set, so definitions without dynamic props keep their recorded shape.
    ...(raw.hasAdditionalProps === true ? { hasAdditionalProps: true } : {}),
  };
  return { errors: [], definition, warnings: definitionWarnings(definition) };
}
