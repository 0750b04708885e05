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

/** The body of a streamed response, delivered as it arrives. */
export interface OutboundBodyHandlers {
  /** One chunk, in order. Return false to pause until `resume()`. */
  data(chunk: Buffer): boolean;
  /** The body ended completely (called at most once, never after `error`). */
  end(): void;
  /** The body failed: a timeout, a network error or a body over the cap (called at most once). */
  error(error: EgressError): void;
}

/** A response whose head has arrived and whose body is read on demand (see `openOutboundStream`). */
export interface OutboundStreamResponse {
  status: number;
  headers: Record<string, string>;
  /** Starts the body; call once. */
  read(handlers: OutboundBodyHandlers): void;
  /** Continues a body paused by `data` returning false. */
  resume(): void;
  /** Drops the connection; no handler is called afterwards. */
  abort(): void;
}

/** Thrown for a refused destination (`code` = `egress_denied`), a timeout (`timeout`) or a network error (`network`). */
export class EgressError extends Error {
  constructor(
    message: string,
    readonly code: 'egress_denied' | 'timeout' | 'network' | 'invalid_url' | 'too_large',
  ) {
    super(message);
    this.name = 'EgressError';
  }
}
