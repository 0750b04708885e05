import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { EndpointTarget, WorkflowEndpointTarget } from '@app/engine';
import { parse as parseQueryString } from 'fast-querystring';
import { errorBody } from '../http/api-exception.filter';
import { EndpointAnswer, writeEndpointAnswer } from './endpoint-answer';
import type { LeanEndpointHandler } from './lean-endpoint-server';
import type { SourceEndpoints } from './source-endpoint.routes';
import { answerWorkflowRequest } from './workflow-endpoint';

/** What a fast path answers for: a deployed source's endpoint, or an active HTTP-triggered workflow's. */
export type FastEndpointTarget = EndpointTarget | WorkflowEndpointTarget;

/** `/e/<key>`, then the end, a sub-path or a query: the key is the second group. */
const ENDPOINT_KEY = /^\/e\/([A-Za-z0-9_-]+)(?:[/?]|$)/;

/**
 * A request to a deployed source's endpoint, served by Node's request handler itself, in front of
 * Fastify: the same answers as the Fastify routes (`SourceEndpoints`, `writeEndpointAnswer`),
 * without their routing, hooks, body parsers and reply pipeline (issue 10: 9% less CPU per event
 * at saturation, measured in docs/architecture.md, "One request, end to end").
 *
 * HTTP-triggered workflows' endpoints are taken the same way (`answerWorkflowRequest`).
 *
 * It takes a request only when it can answer it exactly as the routes would, and leaves the rest
 * to them (returns false without reading anything): another path, a key that is no deployed
 * source's nor active workflow's (a 404), a key with escapes, a body without a length or longer than
 * the endpoint limit (the routes answer 413 and keep the connection readable), and any request
 * once the server is closing (Fastify answers 503 and closes the connection).
 */
export function sourceEndpointFastPath(endpoints: SourceEndpoints, closing: () => boolean): (req: IncomingMessage, res: ServerResponse) => boolean {
  const limit = endpoints.engine.config.maxEndpointBodyBytes;
  return (req, res) => {
    const url = req.url ?? '';
    const target = fastEndpointTarget(endpoints, url, closing);
    if (!target) return false;
    if (req.headers['transfer-encoding'] !== undefined) return false;
    const announced = req.headers['content-length'];
    const length = announced === undefined ? 0 : Number(announced);
    if (!Number.isSafeInteger(length) || length < 0 || length > limit) return false;

    const refused = endpoints.refusal(target, length);
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
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      void answerReadRequest(endpoints, target, req.method ?? 'GET', url, req.headers, body).then((answer) => writeEndpointAnswer(res, answer));
    });
    return true;
  };
}

/**
 * The deployed source, or the active HTTP-triggered workflow, a request for `url` goes to when a
 * fast path may answer it (this one, or the lean server's in front of Node's): a plain key of
 * either, and the server not closing. Undefined leaves the request to the routes.
 */
export function fastEndpointTarget(endpoints: SourceEndpoints, url: string, closing: () => boolean): FastEndpointTarget | undefined {
  if (!url.startsWith('/e/') || closing()) return undefined;
  const key = ENDPOINT_KEY.exec(url)?.[1];
  if (key === undefined) return undefined;
  // A key that is no source's may be an HTTP-triggered workflow's, as in the routes.
  return endpoints.engine.endpoints.find(key) ?? endpoints.engine.workflows.findEndpoint(key);
}

/**
 * The answer to a request whose body is read: the run's (`SourceEndpoints.answer`, or
 * `answerWorkflowRequest` with the run counted as waiting until it ends, as in the routes), or
 * the error's; never rejects.
 */
export function answerReadRequest(
  endpoints: SourceEndpoints,
  target: FastEndpointTarget,
  method: string,
  url: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
): Promise<EndpointAnswer> {
  let answered: Promise<EndpointAnswer>;
  try {
    const q = url.indexOf('?');
    const query = q < 0 || q === url.length - 1 ? {} : parseQueryString(url.slice(q + 1));
    const event = endpoints.event(method, url, headers, query, body);
    if ('workflowId' in target) {
      answered = answerWorkflowRequest(endpoints.engine, target, event, (runDone) => endpoints.waiting.track(target, body.length, runDone));
    } else answered = endpoints.answer(target, event, body.length);
  } catch (error) {
    answered = Promise.reject(error);
  }
  return answered.catch((error: unknown) => {
    const { status, body: json } = errorBody(error);
    return { status, json };
  });
}

/**
 * What the lean server in front of Node's (`lean-endpoint-server.ts`) asks of source and workflow
 * endpoints: the same requests as the fast path takes (a deployed source's or an active workflow's
 * plain key, a body within the limit, not closing), and the same answers.
 */
export function leanEndpointHandler(endpoints: SourceEndpoints, closing: () => boolean): LeanEndpointHandler<FastEndpointTarget> {
  const limit = endpoints.engine.config.maxEndpointBodyBytes;
  return {
    take(head) {
      if (head.contentLength > limit) return undefined;
      return fastEndpointTarget(endpoints, head.url, closing);
    },
    answer(target, head, body) {
      const refused = endpoints.refusal(target, body.length);
      if (refused) return Promise.resolve(refused);
      return answerReadRequest(endpoints, target, head.method, head.url, head.headers, body);
    },
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
