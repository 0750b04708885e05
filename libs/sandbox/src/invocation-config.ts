import type { SandboxInvocation } from './sandbox.types';

/**
 * The guest invocation's configuration members, `"props":{...},"httpProps":{...},"dbProps":[...],"timerProps":{...}`
 * (JSON without the braces), for `inv`'s own objects; absent ones as the guest expects them empty.
 */
export function configMembersJson(inv: Pick<SandboxInvocation, 'props' | 'httpProps' | 'dbProps' | 'timerProps'>): string {
  const json = JSON.stringify({ props: inv.props ?? {}, httpProps: inv.httpProps ?? {}, dbProps: inv.dbProps ?? [], timerProps: inv.timerProps ?? {} });
  return json.slice(1, -1);
}

interface CachedConfig {
  httpProps: SandboxInvocation['httpProps'];
  dbProps: SandboxInvocation['dbProps'];
  timerProps: SandboxInvocation['timerProps'];
  json: string;
}

/** By `props` object: the other three objects it was sent with, and their text. */
const cached = new WeakMap<object, CachedConfig>();

/**
 * `configMembersJson` of a `stableConfig` invocation, made once per set of objects: the same
 * `props` with the same `httpProps`, `dbProps` and `timerProps` (by identity) gives the text made
 * the first time. Only for callers that never change those objects (`SandboxInvocation.stableConfig`).
 */
function stableConfigJson(inv: SandboxInvocation): string {
  const props = inv.props;
  const known = cached.get(props);
  if (known && known.httpProps === inv.httpProps && known.dbProps === inv.dbProps && known.timerProps === inv.timerProps) return known.json;
  const json = configMembersJson(inv);
  cached.set(props, { httpProps: inv.httpProps, dbProps: inv.dbProps, timerProps: inv.timerProps, json });
  return json;
}

/**
 * What the supervisor writes to a worker for `inv`: without its bundle when the worker has it
 * (`withBundle` false), and for a `stableConfig` invocation with its configuration as text.
 */
export function wireInvocation(inv: SandboxInvocation, withBundle: boolean): SandboxInvocation {
  if (inv.stableConfig !== true || inv.props === null || typeof inv.props !== 'object') return withBundle ? inv : Object.assign({}, inv, { bundle: '' });
  // Object.assign, not a spread followed by a new member (configJson): in V8 11 that gives every
  // object made there a hidden class of its own (see `metadataWithTime` in the event store's append-rules.ts).
  return Object.assign({}, inv, {
    bundle: withBundle ? inv.bundle : '',
    // Left out of the message (JSON drops undefined members): their text is in configJson.
    props: undefined as unknown as SandboxInvocation['props'],
    httpProps: undefined,
    dbProps: undefined,
    timerProps: undefined,
    stableConfig: undefined,
    configJson: stableConfigJson(inv),
  });
}

/** Characters of request text an invocation carries: its event's and its raw body's (`bodyRaw`). */
export function requestChars(inv: SandboxInvocation): number {
  return (inv.eventJson?.length ?? 0) + (inv.bodyRaw?.length ?? 0);
}
