import { parse as parseQueryString } from 'node:querystring';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type SluiceEngine, endpointLocation, HttpRequestEvent } from '@app/engine';
import { errorBody, keepAnswerReadable } from '../http/api-exception.filter';
import { safeJsonParse } from '../http/request-params';
import { checkGuestResponse } from './guest-http-response';
import { answerWorkflowRequest } from './workflow-endpoint';

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

  /** Counts a run until `over` settles. */
  track(accountId: string, over: Promise<unknown>): void {
    this.total++;
    this.perAccount.set(accountId, (this.perAccount.get(accountId) ?? 0) + 1);
    void over.catch(() => undefined).finally(() => {
      this.total--;
      const n = (this.perAccount.get(accountId) ?? 1) - 1;
      if (n === 0) this.perAccount.delete(accountId);
      else this.perAccount.set(accountId, n);
    });
  }
}

/**
 * Source HTTP endpoints `/e/<key>` (any method, any sub-path). Registered on Fastify directly, in
 * their own encapsulated context so every content type arrives as raw bytes (the run gets
 * `bodyRaw`). Without `customResponse` the answer is a 200 as soon as the request is durably in
 * the log; the run follows (and is resumed after a crash from the pending-requests read model).
 */
export function registerSourceEndpoints(fastify: FastifyInstance, engine: SluiceEngine): void {
  const waiting = new WaitingRuns(engine.config.maxQueuedRuns, engine.config.maxQueuedRunsPerAccount);
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
      if (!waiting.hasRoom(accountId)) {
        return reply.status(429).header('retry-after', '1').send({ error: 'too many requests waiting to run; retry shortly', code: 'rate_limited' });
      }
      const buf = req.body as Buffer | undefined;
      const bodyRaw = buf && buf.length ? buf.toString('utf8') : '';
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
      const event: HttpRequestEvent = {
        method: req.method,
        ...endpointLocation(req.url, engine.config.publicUrl),
        query: { ...(req.query as Record<string, unknown>) },
        headers,
        bodyRaw,
        body: parseBody(headers['content-type'] ?? '', bodyRaw),
      };
      if (!target) {
        return answerWorkflowRequest(engine, workflow!, event, reply, (runDone) => {
          waiting.track(accountId, runDone);
        });
      }
      // The answer waits for the request's fsync (`recorded`); the run does not.
      const { requestId, recorded, outcome: runOutcome, durable } = engine.endpoints.receive(target.sourceId, event, { customResponse: target.customResponse });
      waiting.track(accountId, durable);
      durable.catch((err) => console.error(`run of ${target.sourceId} for ${requestId} failed`, err));
      runOutcome.catch(() => undefined);
      await recorded;
      if (!target.customResponse) return reply.status(200).send({ ok: true, request_id: requestId });
      const outcome = await runOutcome;
      const res = outcome?.result.httpResponse;
      if (!outcome || !outcome.result.ok) {
        const e = outcome?.result.error;
        return reply.status(500).send({ error: e ? `the source failed: ${e.name}: ${e.message}` : 'the source did not run', code: 'run_failed' });
      }
      if (!res) return reply.status(502).send({ error: 'the source ended without calling respond()', code: 'no_response' });
      const checked = checkGuestResponse(res);
      if (!checked.ok) {
        // One line per bad response, no stack: the component is at fault, not the server.
        console.error(`sluice: source ${target.sourceId} request ${requestId}: invalid custom response: ${checked.problem}`);
        return reply.status(502).send({ error: `the source's response cannot be sent: ${checked.problem}`, code: 'invalid_response' });
      }
      for (const [k, v] of Object.entries(checked.headers)) reply.header(k, v);
      return reply.status(checked.status).send(checked.body);
    };
    child.all('/e/:key', handler);
    child.all('/e/:key/*', handler);
  });
}
