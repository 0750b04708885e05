import type { ActionRunOutcome } from '@app/engine';

/**
 * An action run as `POST /v1/actions/run` answers it: the original's `{ret, exports, summary, os}`
 * (compat), then what this server adds: `ok`, the queued `sends` (not performed), `http_response`
 * from `$.respond`, `flow_exit` from `$.flow.exit`, and `warnings` about the definition.
 */
export function presentActionRun(o: ActionRunOutcome): Record<string, unknown> {
  return {
    ret: o.ret,
    exports: o.exports,
    summary: o.summary ?? null,
    os: o.os,
    ok: o.ok,
    component_id: o.componentId,
    sends: o.sends,
    ...(o.httpResponse ? { http_response: o.httpResponse } : {}),
    ...(o.flowExit ? { flow_exit: o.flowExit } : {}),
    ...(o.warnings.length > 0 ? { warnings: o.warnings } : {}),
  };
}
