import { baseType, validateProps, type PropDefinition, type RawDescription } from '@app/domain';
import { MAX_ADDITIONAL_PROPS, MAX_PROP_OPTIONS, MAX_PROP_OPTIONS_BYTES, UNKNOWN_PROP_ERROR } from '@app/sandbox';
import type { SandboxInvocation, SandboxResult } from '@app/sandbox';
import { ComponentCallFailedError, ComponentConfigurationError, ComponentInvalidError, NotFoundError } from './engine-errors';
import type { CompiledComponent, EngineRuntime } from './engine-runtime';

/** Types `additionalProps()` may add: values a user configures. Interfaces and services are wired at deploy from the static props only. */
const DYNAMIC_PROP_TYPES = new Set(['boolean', 'integer', 'string', 'object', 'any', 'app']);

/** One page of a prop's options as the API returns it. */
export interface PropOptionsPage {
  options: unknown[];
  context: unknown;
}

/**
 * The invocation of a configuring entry (`options`, `additionalProps`). It runs in an isolate of
 * its own per account and code (`<account>/props@<code hash>`), never a deployed source's, so
 * module state never crosses accounts and a deployed source's state is never seen while someone
 * configures. `props` are the configured props as the account gave them: `EngineRuntime.invoke`
 * turns app props into their `$auth`.
 */
function configuringInvocation(accountId: string, comp: CompiledComponent, props: Record<string, unknown>, extra: Partial<SandboxInvocation>): SandboxInvocation {
  // A db prop reads as empty (nothing is deployed yet) and its writes are dropped.
  const dbProps = comp.definition.props.filter((p) => baseType(p.type).base === '$.service.db').map((p) => p.name);
  return {
    codeId: comp.codeHash,
    instanceId: `${accountId}/props@${comp.codeHash}`,
    bundle: comp.bundle,
    entry: 'additionalProps',
    props,
    dbProps,
    db: {},
    dbBytes: 0,
    ...extra,
  };
}

/** A failed configuring call as the engine's error: ConfigurationError for the user, an unknown prop as 404, the rest as a failed call. */
function failure(call: string, result: SandboxResult, prop?: string): Error {
  const error = result.error ?? { name: 'Error', message: 'failed without details' };
  if (error.name === 'ConfigurationError') return new ComponentConfigurationError(error.message);
  if (prop !== undefined && error.name === UNKNOWN_PROP_ERROR) return new NotFoundError(`prop ${prop}`);
  // The sandbox repeats the error as the last log line; it is in `error` already.
  const logs = result.logs.filter((l, i) => !(i === result.logs.length - 1 && l.level === 'error'));
  return new ComponentCallFailedError(call, { name: error.name, message: error.message }, logs);
}

/**
 * The props `additionalProps()` adds for these configured props, validated like static props
 * (spec 2.5 "Dynamic props"). Only user-input and app props may be added: an added interface or
 * service could not be wired. A component without the method adds none, without a sandbox call.
 */
export async function additionalProps(rt: EngineRuntime, accountId: string, comp: CompiledComponent, configured: Record<string, unknown>): Promise<PropDefinition[]> {
  if (!comp.definition.hasAdditionalProps) return [];
  const result = await rt.invoke(accountId, configuringInvocation(accountId, comp, configured, { entry: 'additionalProps' }));
  if (!result.ok) throw failure('additionalProps', result);
  const raw = result.returnValue;
  // The guest runtime describes and caps them; a tampered runtime is caught here.
  if (!Array.isArray(raw) || raw.length > MAX_ADDITIONAL_PROPS || !raw.every((p) => typeof p === 'object' && p !== null && typeof p.name === 'string')) {
    throw new ComponentCallFailedError('additionalProps', { name: 'TypeError', message: 'did not return props' }, result.logs);
  }
  const { props, errors } = validateProps(raw as RawDescription['props'], comp.definition.type === 'source');
  for (const p of props) {
    if (!DYNAMIC_PROP_TYPES.has(baseType(p.type).base)) errors.push({ field: `props.${p.name}.type`, message: `"${p.type}" cannot be added by additionalProps(); only user-input and app props can` });
  }
  if (errors.length) throw new ComponentInvalidError(errors, `additionalProps() returned invalid props: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`);
  return props;
}

/** Static props with the added ones: an added prop replaces a static prop of the same name, new ones come last. */
export function mergeProps(statics: PropDefinition[], added: PropDefinition[]): PropDefinition[] {
  const byName = new Map(added.map((p) => [p.name, p]));
  const merged = statics.map((p) => byName.get(p.name) ?? p);
  const seen = new Set(statics.map((p) => p.name));
  return [...merged, ...added.filter((p) => !seen.has(p.name))];
}

/** Every prop the configured values are validated against: the static ones merged with what `additionalProps()` adds for them. */
export async function effectiveProps(rt: EngineRuntime, accountId: string, comp: CompiledComponent, configured: Record<string, unknown>): Promise<PropDefinition[]> {
  return mergeProps(comp.definition.props, await additionalProps(rt, accountId, comp, configured));
}

/**
 * One page of a prop's options (spec 2.5 "Async options"): the static list, or what its options
 * method returns for `page`, `prevContext` and `query`, as `{options, context}`. The guest runtime
 * normalises and caps the answer; the host checks its shape and caps again.
 */
export async function propOptions(
  rt: EngineRuntime,
  accountId: string,
  comp: CompiledComponent,
  prop: string,
  request: { configured: Record<string, unknown>; page: number; prevContext: unknown; query?: string },
): Promise<PropOptionsPage> {
  const call = `the options of prop "${prop}"`;
  const result = await rt.invoke(accountId, configuringInvocation(accountId, comp, request.configured, {
    entry: 'options',
    propOptions: { prop, page: request.page, prevContext: request.prevContext, ...(request.query !== undefined ? { query: request.query } : {}) },
  }));
  if (!result.ok) throw failure(call, result, prop);
  const value = result.returnValue as { options?: unknown; context?: unknown } | undefined;
  if (typeof value !== 'object' || value === null || !Array.isArray(value.options) || value.options.length > MAX_PROP_OPTIONS
    || Buffer.byteLength(JSON.stringify(value)) > MAX_PROP_OPTIONS_BYTES) {
    throw new ComponentCallFailedError(call, { name: 'TypeError', message: 'did not return options within the limits' }, result.logs);
  }
  return { options: value.options, context: value.context ?? null };
}
