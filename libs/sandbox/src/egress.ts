import { EgressError, EgressPolicy, openOutboundStream, OutboundRequest, OutboundResponse, OutboundStreamResponse, performOutbound } from '@app/delivery';

/** Performs one outbound request for a guest's `fetch`; rejects for refused or failed requests. */
export type EgressFunction = (request: OutboundRequest) => Promise<OutboundResponse>;

/** Opens one outbound request whose body is streamed to the guest (Node's `http`/`https`). */
export type StreamEgressFunction = (request: OutboundRequest) => Promise<OutboundStreamResponse>;

/**
 * The egress the worker gives guests: every request goes through the delivery library's SSRF
 * guard with the supervisor's allow list (`SLUICE_COMPONENT_EGRESS_ALLOW`, not the webhooks' one).
 */
export function createEgress(policy: EgressPolicy): EgressFunction {
  return (request) => performOutbound(request, policy);
}

/** The streaming twin of {@link createEgress}: the same guard and allow list. */
export function createStreamEgress(policy: EgressPolicy): StreamEgressFunction {
  return (request) => openOutboundStream(request, policy);
}

/** The failure code reported to the guest (`egress_denied`, `timeout`, `network`, `invalid_url`, `too_large`). */
export function egressFailureCode(error: unknown): string {
  return error instanceof EgressError ? error.code : 'network';
}
