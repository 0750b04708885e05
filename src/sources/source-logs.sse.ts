import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { LoggedEntry } from '@app/projections';
import type { SluiceEngine } from '@app/engine';
import { errorBody } from '../http/api-exception.filter';
import { accountFromAuthorization } from '../http/auth.guard';
import { openSseStream } from '../http/sse-stream';

/** Kept entries replayed to a stream that resumes (as many as `GET /v1/sources/{id}/logs` shows). */
const REPLAYED = 100;

/**
 * `GET /v1/sources/{id}/logs/sse` (and `/sources/{id}/logs/sse`): each run's and hook's log
 * entry as a server-sent event once it is recorded, `data:` shaped like an item of
 * `GET /v1/sources/{id}/logs` (`{kind, at, ok, error, logs, ...}`) and `id:` its log position.
 * With `Last-Event-ID` the kept entries after it are replayed first, then the stream goes live
 * without a gap or a repeat: the listener is attached before the backlog is read, in the same
 * synchronous turn, and nothing at or before the last id sent is sent again.
 */
export function registerSourceLogStream(fastify: FastifyInstance, engine: SluiceEngine): void {
  const handler = (req: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
    let sourceId: string;
    try {
      const accountId = accountFromAuthorization(engine.queries, req.headers.authorization);
      sourceId = engine.queries.ownSource(accountId, req.params.id).id;
    } catch (err) {
      const { status, body } = errorBody(err);
      return reply.status(status).send(body);
    }
    const header = req.headers['last-event-id'];
    const resumeFrom = typeof header === 'string' && /^\d{1,15}$/.test(header.trim()) ? Number(header.trim()) : undefined;
    let last = resumeFrom ?? Number.MAX_SAFE_INTEGER;
    let stopListening = () => {};
    const { write, end } = openSseStream(req, reply, () => stopListening());
    // A deleted source's stream ends: a client reconnecting gets its 404.
    const stopGone = engine.onSourceGone(sourceId, () => end());
    const send = (e: LoggedEntry) => {
      if (e.pos <= last) return;
      last = e.pos;
      write(`id: ${e.pos}\ndata: ${JSON.stringify({ kind: e.kind, at: e.at, ...e.data })}\n\n`);
    };
    const stopLogs = engine.onLogged(sourceId, send);
    stopListening = () => {
      stopLogs();
      stopGone();
    };
    if (resumeFrom !== undefined) {
      for (const r of engine.queries.sourceLogsAfter(sourceId, resumeFrom, REPLAYED)) {
        send({ sourceId, pos: r.pos, kind: r.kind, at: r.at, data: r.data });
      }
    } else {
      last = -1;
    }
  };
  fastify.get('/v1/sources/:id/logs/sse', handler);
  fastify.get('/sources/:id/logs/sse', handler);
}
