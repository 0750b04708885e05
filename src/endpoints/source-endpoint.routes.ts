import { parse as parseQueryString } from 'node:querystring';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import { type EndpointTarget, type SluiceEngine, endpointLocation, HttpRequestEvent } from '@app/engine';
import { errorBody, keepAnswerReadable } from '../http/api-exception.filter';
import { safeJsonParse } from '../http/request-params';
import { checkGuestResponse } from './guest-http-response';
import { answerWorkflowRequest } from './workflow-endpoint';
import { EndpointAnswer, rateLimitedAnswer, writeEndpointAnswer } from './endpoint-answer';

function parseBody(contentType: string, raw: string): unknown {
  if (raw === '') return undefined;
  if (contentType.includes('json')) {
    try {
      return safeJsonParse(raw);
    } catch {
      return raw;
    }
  }
  if (contentType.includes('application/x-www-form-urlencoded')) return { ...parseQueryString(raw) };
  return raw;
}

/** Runs taken by the endpoints and not yet over, in all and per account, against their caps. */
class WaitingRuns {
  private total = 0;
  private readonly perAccount = new Map<string, number>();
  constructor(private readonly max: number, private readonly maxPerAccount: number) {}

  hasRoom(accountId: string): boolean {
    return this.total < this.max && (this.perAccount.get(accountId) ?? 0) < this.maxPerAccount;
  }

  /**
   * Counts a run until `over` settles; `onError` gets its rejection. One reaction for both ends
   * (`then` with two callbacks): `catch` then `finally`, and the caller's own `catch` beside
   * them, made three promises per request and `finally` two more closures.
   */
  track(accountId: string, over: Promise<unknown>, onError: (error: unknown) => void = () => undefined): void {
    this.total++;
    this.perAccount.set(accountId, (this.perAccount.get(accountId) ?? 0) + 1);
    over.then(() => this.release(accountId), (error: unknown) => {
      this.release(accountId);
      onError(error);
    });
  }

  private release(accountId: string): void {
    this.total--;
    const n = (this.perAccount.get(accountId) ?? 1) - 1;
    if (n === 0) this.perAccount.delete(accountId);
    else this.perAccount.set(accountId, n);
  }
}

/**
 * What source endpoints do once a request is read, shared by the Fastify routes and the fast path
 * in front of them (`source-endpoint.fast-path.ts`): the cap on waiting runs, the run's event,
 * and the answer.
 */
export class SourceEndpoints {
  readonly waiting: WaitingRuns;

  constructor(readonly engine: SluiceEngine) {
    this.waiting = new WaitingRuns(engine.config.maxQueuedRuns, engine.config.maxQueuedRunsPerAccount);
  }

  /** The 429 for a request beyond the runs waiting in this process, or those of its account; undefined when there is room. */
  refusal(accountId: string): EndpointAnswer | undefined {
    if (this.waiting.hasRoom(accountId)) return undefined;
    return rateLimitedAnswer('too many requests waiting to run; retry shortly');
  }

  /** The run's event of a request (`url`: the request target, path and query). */
  event(method: string, url: string, rawHeaders: IncomingHttpHeaders, query: Record<string, unknown>, buf: Buffer | undefined): HttpRequestEvent {
    const bodyRaw = buf && buf.length ? buf.toString('utf8') : '';
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(rawHeaders)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
    return {
      method,
      ...endpointLocation(url, this.engine.config.publicUrl),
      query: { ...query },
      headers,
      bodyRaw,
      body: parseBody(headers['content-type'] ?? '', bodyRaw),
    };
  }

  /**
   * Records the request and answers it: a 200 once it is durable, or for a `customResponse`
   * source the run's response once the request is durable and the run is over.
   */
  async answer(target: EndpointTarget, event: HttpRequestEvent): Promise<EndpointAnswer> {
    // The answer waits for the request's fsync (`recorded`); the run does not.
    const { requestId, recorded, outcome: runOutcome, durable, ran } = this.engine.endpoints.receive(target.sourceId, event, { customResponse: target.customResponse });
    this.waiting.track(target.accountId, durable, (err) => console.error(`run of ${target.sourceId} for ${requestId} failed`, err));
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
      const accountId = (target ?? workflow)!.accountId;
      // Beyond the runs waiting in this process, or those of this account, refuse instead of queueing without bound.
      const refused = endpoints.refusal(accountId);
      if (refused) return sendAnswer(reply, refused);
      const event = endpoints.event(req.method, req.url, req.headers, req.query as Record<string, unknown>, req.body as Buffer | undefined);
      if (!target) {
        return sendAnswer(reply, await answerWorkflowRequest(engine, workflow!, event, (runDone) => {
          endpoints.waiting.track(accountId, runDone);
        }));
      }
      return sendAnswer(reply, await endpoints.answer(target, event));
    };
    child.all('/e/:key', handler);
    child.all('/e/:key/*', handler);
  });
  return endpoints;
}
