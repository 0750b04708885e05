/** Egress policy: which destinations outbound requests may reach. */
export interface EgressPolicy {
  /** Hosts (exact names, e.g. `localhost`), IPs or CIDRs (`127.0.0.1`, `10.0.0.0/8`, `::1/128`) allowed despite the SSRF guard. */
  allow: string[];
  /** The variable a refusal tells the operator to set (default `SLUICE_EGRESS_ALLOW`). */
  allowVariable?: string;
}

/** One outbound HTTP request performed by the host (webhook delivery or a guest's `fetch`). */
export interface OutboundRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  timeoutMs: number;
  /** Largest response body kept (bytes); the rest is dropped. Default 1 MiB. */
  maxResponseBytes?: number;
}

/** What came back. Redirects are never followed: a 3xx is returned as is. */
export interface OutboundResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  durationMs: number;
}

/** Thrown for a refused destination (`code` = `egress_denied`), a timeout (`timeout`) or a network error (`network`). */
export class EgressError extends Error {
  constructor(
    message: string,
    readonly code: 'egress_denied' | 'timeout' | 'network' | 'invalid_url',
  ) {
    super(message);
    this.name = 'EgressError';
  }
}
