import { parse as parseQueryString } from 'node:querystring';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import {
  type EndpointTarget, type SluiceEngine, type RequestsWaiting, type WaitingRefusal, type WorkflowEndpointTarget,
  endpointLocation, HttpRequestEvent, isJsonBody,
} from '@app/engine';
import { errorBody, keepAnswerReadable } from '../http/api-exception.filter';
import { checkGuestResponse } from './guest-http-response';
import { answerWorkflowRequest } from './workflow-endpoint';
import { EndpointAnswer, rateLimitedAnswer, writeEndpointAnswer } from './endpoint-answer';

/** The body of a request without a JSON content type (see `SourceEndpoints.event` for those). */
function parseBody(contentType: string, raw: string): unknown {
  if (raw === '') return undefined;
  if (contentType.includes('application/x-www-form-urlencoded')) return { ...parseQueryString(raw) };
  return raw;
}

/**
 * What source endpoints do once a request is read, shared by the Fastify routes and the fast path
 * in front of them (`source-endpoint.fast-path.ts`): the cap on waiting runs, the run's event,
 * and the answer.
 */
export class SourceEndpoints {
  readonly waiting: RequestsWaiting;

  constructor(readonly engine: SluiceEngine) {
    this.waiting = engine.endpoints.waiting;
  }

  /**
   * The 429 for a request of `bytes` (its body's length) beyond what may wait to run: in this
   * process, for its account, or for its endpoint (runs and bodies' bytes); undefined when there is room.
   */
  refusal(target: EndpointTarget | WorkflowEndpointTarget, bytes: number): EndpointAnswer | undefined {
    const why = this.waiting.refusal(target, bytes);
    return why === undefined ? undefined : rateLimitedAnswer(refusalText(why, target));
  }

  /** The run's event of a request (`url`: the request target, path and query). */
  event(method: string, url: string, rawHeaders: IncomingHttpHeaders, query: Record<string, unknown>, buf: Buffer | undefined): HttpRequestEvent {
    const bodyRaw = buf && buf.length ? buf.toString('utf8') : '';
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(rawHeaders)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
    const contentType = headers['content-type'] ?? '';
    // A JSON body is not parsed here: the run's invocation and the request's record carry only
    // `bodyRaw`, and the guest makes `body` from it (`requestTexts`, `jsonRequestBody`, which is
    // what anything else on the server that wants it must call). Not a getter either: an
    // accessor defined on each event gave each its own hidden class, allocated in V8's old
    // space, and at 200 requests/s the server's GC threads used 90 us more per request.
    const body = isJsonBody(contentType, bodyRaw) ? undefined : parseBody(contentType, bodyRaw);
    return {
      method,
      ...endpointLocation(url, this.engine.config.publicUrl),
      query: { ...query },
      headers,
      bodyRaw,
      body,
    };
  }

  /**
   * Records the request and answers it: a 200 once it is durable, or for a `customResponse`
   * source the run's response once the request is durable and the run is over. It counts as
   * waiting, with its body's `bytes`, until its run is durable.
   */
  async answer(target: EndpointTarget, event: HttpRequestEvent, bytes: number): Promise<EndpointAnswer> {
    // The answer waits for the request's fsync (`recorded`); the run does not.
    const { requestId, recorded, outcome: runOutcome, durable, ran } = this.engine.endpoints.receive(target.sourceId, event, {
      customResponse: target.customResponse, jsonBody: isJsonBody(event.headers['content-type'] ?? '', event.bodyRaw),
    });
    this.waiting.track(target, bytes, durable, (err) => console.error(`run of ${target.sourceId} for ${requestId} failed`, err));
    runOutcome.catch(() => undefined);
    ran.catch(() => undefined);
    await recorded;
    if (!target.customResponse) return { status: 200, json: { ok: true, request_id: requestId } };
    // Answered from the run's result as soon as it is final: its record is built and queued after
    // (a crash before that record is durable re-runs the request, as it would have anyway).
    const result = await ran;
    const res = result?.httpResponse;
    if (!result || !result.ok) {
      const e = result?.error;
      return { status: 500, json: { error: e ? `the source failed: ${e.name}: ${e.message}` : 'the source did not run', code: 'run_failed' } };
    }
    if (!res) return { status: 502, json: { error: 'the source ended without calling respond()', code: 'no_response' } };
    const checked = checkGuestResponse(res);
    if (!checked.ok) {
      // One line per bad response, no stack: the component is at fault, not the server.
      console.error(`sluice: source ${target.sourceId} request ${requestId}: invalid custom response: ${checked.problem}`);
      return { status: 502, json: { error: `the source's response cannot be sent: ${checked.problem}`, code: 'invalid_response' } };
    }
    return { status: checked.status, headers: checked.headers, raw: checked.body };
  }
}

/** The 429's message: which cap the request met. */
function refusalText(why: WaitingRefusal, target: EndpointTarget | WorkflowEndpointTarget): string {
  const what = 'workflowId' in target ? `workflow ${target.workflowId}` : `source ${target.sourceId}`;
  switch (why) {
    case 'process': return 'too many requests waiting to run in this server; retry shortly';
    case 'bytes': return 'too many request bytes waiting to run in this server; retry shortly';
    case 'account': return 'too many requests waiting to run for this account; retry shortly';
    case 'account_bytes': return 'too many request bytes waiting to run for this account; retry shortly';
    case 'source_runs': return `${what} has too many requests waiting to run; retry shortly`;
    case 'endpoint_bytes': return `${what} has too many request bytes waiting to run; retry shortly`;
  }
}

/** Hands the answer to the same writer as the fast path's: Fastify does not send it. */
function sendAnswer(reply: FastifyReply, answer: EndpointAnswer): FastifyReply {
  reply.hijack();
  writeEndpointAnswer(reply.raw, answer);
  return reply;
}

/**
 * Source HTTP endpoints `/e/<key>` (any method, any sub-path). Registered on Fastify directly, in
 * their own encapsulated context so every content type arrives as raw bytes (the run gets
 * `bodyRaw`). Without `customResponse` the answer is a 200 as soon as the request is durably in
 * the log; the run follows (and is resumed after a crash from the pending-requests read model).
 * Most requests to a source's endpoint never reach these routes: the fast path in front of
 * Fastify takes them (`source-endpoint.fast-path.ts`). These take what it leaves: workflow
 * endpoints, unknown keys, bodies it does not read itself (too large, chunked), a closing server.
 */
export function registerSourceEndpoints(fastify: FastifyInstance, engine: SluiceEngine): SourceEndpoints {
  const endpoints = new SourceEndpoints(engine);
  void fastify.register(async (child) => {
    child.removeAllContentTypeParsers();
    child.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: engine.config.maxEndpointBodyBytes }, (_req, body, done) => done(null, body));
    child.setErrorHandler((err, req, reply) => {
      const { status, body } = errorBody(err);
      keepAnswerReadable(status, req.headers, reply);
      void reply.status(status).send(body);
    });
    const handler = async (req: FastifyRequest<{ Params: { key: string; '*'?: string } }>, reply: FastifyReply) => {
      const target = engine.endpoints.find(req.params.key);
      // A key that is no source's may be an HTTP-triggered workflow's (same rules, workflow-endpoint.ts).
      const workflow = target ? undefined : engine.workflows.findEndpoint(req.params.key);
      if (!target && !workflow) {
        return reply.status(404).send({ error: 'no active source at this endpoint', code: 'not_found' });
      }
      const body = req.body as Buffer | undefined;
      const bytes = body?.length ?? 0;
      // Beyond the requests waiting in this process, for this account or for this endpoint, refuse instead of queueing without bound.
      const refused = endpoints.refusal((target ?? workflow)!, bytes);
      if (refused) return sendAnswer(reply, refused);
      const event = endpoints.event(req.method, req.url, req.headers, req.query as Record<string, unknown>, body);
      if (!target) {
        return sendAnswer(reply, await answerWorkflowRequest(engine, workflow!, event, (runDone) => endpoints.waiting.track(workflow!, bytes, runDone)));
      }
      return sendAnswer(reply, await endpoints.answer(target, event, bytes));
    };
    child.all('/e/:key', handler);
    child.all('/e/:key/*', handler);
  });
  return endpoints;
}
