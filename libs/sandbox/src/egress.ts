import { EgressError, EgressPolicy, OutboundRequest, OutboundResponse, performOutbound } from '@app/delivery';

/** Performs one outbound request for a guest's `fetch`; rejects for refused or failed requests. */
export type EgressFunction = (request: OutboundRequest) => Promise<OutboundResponse>;

/**
 * The egress the worker gives guests: every request goes through the delivery library's SSRF
 * guard with the supervisor's allow list (`SLUICE_COMPONENT_EGRESS_ALLOW`, not the webhooks' one).
 */
export function createEgress(policy: EgressPolicy): EgressFunction {
  return (request) => performOutbound(request, policy);
}

/** The failure code reported to the guest (`egress_denied`, `timeout`, `network`, `invalid_url`). */
export function egressFailureCode(error: unknown): string {
  return error instanceof EgressError ? error.code : 'network';
}
