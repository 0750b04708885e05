import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { parse as parseQueryString } from 'fast-querystring';
import { errorBody } from '../http/api-exception.filter';
import { EndpointAnswer, writeEndpointAnswer } from './endpoint-answer';
import type { SourceEndpoints } from './source-endpoint.routes';

/** `/e/<key>`, then the end, a sub-path or a query: the key is the second group. */
const ENDPOINT_KEY = /^\/e\/([A-Za-z0-9_-]+)(?:[/?]|$)/;

/**
 * A request to a deployed source's endpoint, served by Node's request handler itself, in front of
 * Fastify: the same answers as the Fastify routes (`SourceEndpoints`, `writeEndpointAnswer`),
 * without their routing, hooks, body parsers and reply pipeline (issue 10: 9% less CPU per event
 * at saturation, measured in docs/architecture.md, "One request, end to end").
 *
 * It takes a request only when it can answer it exactly as the routes would, and leaves the rest
 * to them (returns false without reading anything): another path, a key that is no deployed
 * source's (a workflow's, or a 404), a key with escapes, a body without a length or longer than
 * the endpoint limit (the routes answer 413 and keep the connection readable), and any request
 * once the server is closing (Fastify answers 503 and closes the connection).
 */
export function sourceEndpointFastPath(endpoints: SourceEndpoints, closing: () => boolean): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { engine } = endpoints;
  const limit = engine.config.maxEndpointBodyBytes;
  return (req, res) => {
    const url = req.url ?? '';
    if (!url.startsWith('/e/') || closing()) return false;
    const key = ENDPOINT_KEY.exec(url)?.[1];
    if (key === undefined) return false;
    const target = engine.endpoints.find(key);
    if (!target) return false;
    if (req.headers['transfer-encoding'] !== undefined) return false;
    const announced = req.headers['content-length'];
    const length = announced === undefined ? 0 : Number(announced);
    if (!Number.isSafeInteger(length) || length < 0 || length > limit) return false;

    const refused = endpoints.refusal(target.accountId);
    if (refused) {
      // The body is not read: Node reads and drops it before the next request on the connection.
      writeEndpointAnswer(res, refused);
      return true;
    }
    const chunks: Buffer[] = [];
    // A client that goes away mid-body: nothing to answer, and no unhandled error.
    req.on('error', () => undefined);
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const q = url.indexOf('?');
      const query = q < 0 || q === url.length - 1 ? {} : parseQueryString(url.slice(q + 1));
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      let answered: Promise<EndpointAnswer>;
      try {
        answered = endpoints.answer(target, endpoints.event(req.method ?? 'GET', url, req.headers, query, body));
      } catch (error) {
        answered = Promise.reject(error);
      }
      answered.then((answer) => writeEndpointAnswer(res, answer), (error: unknown) => {
        const { status, body: json } = errorBody(error);
        writeEndpointAnswer(res, { status, json });
      });
    });
    return true;
  };
}

/**
 * Puts `fastPath` in front of the server's request handler (Fastify's): a request it takes never
 * reaches Fastify. Call before the server listens.
 */
export function serveInFront(server: Server, fastPath: (req: IncomingMessage, res: ServerResponse) => boolean): void {
  const handlers = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  if (handlers.length !== 1) throw new Error(`expected one request handler on the server, found ${handlers.length}`);
  const [behind] = handlers;
  server.removeListener('request', behind);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!fastPath(req, res)) behind(req, res);
  });
}
