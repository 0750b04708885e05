import type { Server, ServerOptions } from 'node:http';
import type { SluiceConfig } from '@app/config';
import type { LeanServerLimits } from '../endpoints/lean-endpoint-server';

/** The Fastify and Node server options that bound how long and how many connections a client may hold. */
export interface HttpServerLimits {
  /** The same for the lean endpoint server in front of Node's. */
  lean: LeanServerLimits;
  /** Fastify's own copies: Fastify writes them onto the server after creating it. */
  requestTimeout: number;
  keepAliveTimeout: number;
  /** Passed to `http.createServer`. */
  http: ServerOptions;
}

/**
 * Timeouts for the request head, the whole request (head and body) and idle keep-alive
 * connections, from the configuration. A client that is too slow gets a 408 and its connection
 * closed, so slow or stalled uploads cannot pile up until the server runs out of sockets.
 *
 * Node checks the head and request timeouts only every `connectionsCheckingInterval` (30 s by
 * default, longer than short timeouts); it is derived here as a quarter of the shorter timeout,
 * between 10 ms and 1 s, so a timeout is enforced within about a quarter of its length.
 */
export function httpServerLimits(config: SluiceConfig): HttpServerLimits {
  const checkingInterval = Math.min(1000, Math.max(10, Math.floor(Math.min(config.httpHeadersTimeoutMs, config.httpBodyTimeoutMs) / 4)));
  return {
    lean: {
      headersTimeoutMs: config.httpHeadersTimeoutMs,
      requestTimeoutMs: config.httpBodyTimeoutMs,
      keepAliveTimeoutMs: config.httpKeepAliveTimeoutMs,
      checkIntervalMs: checkingInterval,
      // Node's default --max-http-header-size.
      maxHeadBytes: 16 * 1024,
    },
    requestTimeout: config.httpBodyTimeoutMs,
    keepAliveTimeout: config.httpKeepAliveTimeoutMs,
    http: {
      headersTimeout: config.httpHeadersTimeoutMs,
      requestTimeout: config.httpBodyTimeoutMs,
      keepAliveTimeout: config.httpKeepAliveTimeoutMs,
      connectionsCheckingInterval: checkingInterval,
    },
  };
}

/** Caps open connections: beyond `httpMaxConnections` Node closes new ones at once. */
export function limitConnections(server: Server, config: SluiceConfig): void {
  server.maxConnections = config.httpMaxConnections;
}
