import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EmittedSummary } from '@app/projections';
import type { SluiceEngine } from '@app/engine';
import { errorBody } from '../http/api-exception.filter';
import { accountFromAuthorization } from '../http/auth.guard';
import { parseInput } from '../http/input-validation.pipe';
import { openSseStream } from '../http/sse-stream';
import { presentEventSummary } from './source.presenter';
import { EventStreamQueryDto } from './dto/event-stream-query.dto';


function parseSummaryId(id: string | undefined): [number, number] | undefined {
  const m = id ? /^(\d+)-(\d+)$/.exec(id.trim()) : null;
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/**
 * `GET /v1/sources/{id}/sse` (and `/sources/{id}/sse`): new emits as server-sent events, `data:`
 * being the event summary item (event expanded) and `id:` its summary id. With `Last-Event-ID`
 * the stream first replays the kept events after that id, then goes live without a gap: the
 * listener is attached before the backlog is read, and both run in the same synchronous turn.
 */
export function registerSourceEventStream(fastify: FastifyInstance, engine: SluiceEngine): void {
  const handler = (req: FastifyRequest<{ Params: { id: string }; Querystring: { event_name?: string } }>, reply: FastifyReply) => {
    let source;
    let channel: string | undefined;
    try {
      const accountId = accountFromAuthorization(engine.queries, req.headers.authorization);
      source = engine.queries.ownSource(accountId, req.params.id);
      channel = parseInput(EventStreamQueryDto, { ...req.query }).event_name;
    } catch (err) {
      const { status, body } = errorBody(err);
      return reply.status(status).send(body);
    }
    const sourceId = source.id;
    let last = parseSummaryId(req.headers['last-event-id'] as string | undefined) ?? [Number.MAX_SAFE_INTEGER, 0];
    let stopListening = () => {};
    const { write, end } = openSseStream(req, reply, () => stopListening());
    // A deleted source's stream ends: a client reconnecting gets its 404.
    const stopGone = engine.onSourceGone(sourceId, () => end());
    const send = (e: EmittedSummary) => {
      if (channel !== undefined && e.channel !== channel) return;
      const [ms, seq] = parseSummaryId(e.summaryId)!;
      if (ms < last[0] || (ms === last[0] && seq <= last[1])) return;
      last = [ms, seq];
      write(`id: ${e.summaryId}\ndata: ${JSON.stringify(presentEventSummary(sourceId, e, true))}\n\n`);
    };
    const stopEmits = engine.onEmitted(sourceId, send);
    stopListening = () => {
      stopEmits();
      stopGone();
    };
    if (last[0] !== Number.MAX_SAFE_INTEGER) {
      for (const r of engine.queries.sourceEventsAfter(sourceId, last[0], last[1], 100, channel)) {
        send({ sourceId, summaryId: r.summary_id, ms: r.ms, channel: r.channel, emitId: r.emit_id, event: JSON.parse(r.event), meta: JSON.parse(r.meta) });
      }
    } else {
      last = [0, -1];
    }
  };
  fastify.get('/v1/sources/:id/sse', handler);
  fastify.get('/sources/:id/sse', handler);
}
