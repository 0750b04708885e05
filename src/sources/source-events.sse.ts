import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EmittedSummary } from '@app/projections';
import type { SluiceEngine } from '@app/engine';
import { errorBody } from '../http/api-exception.filter';
import { accountFromAuthorization } from '../http/auth.guard';
import { parseInput } from '../http/input-validation.pipe';
import { presentEventSummary } from './source.presenter';
import { EventStreamQueryDto } from './dto/event-stream-query.dto';

/** How often an idle stream gets a comment line, so proxies keep it open. */
export const SSE_KEEPALIVE_MS = 15_000;

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
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    res.write(': connected\n\n');
    const send = (e: EmittedSummary) => {
      if (channel !== undefined && e.channel !== channel) return;
      const [ms, seq] = parseSummaryId(e.summaryId)!;
      if (ms < last[0] || (ms === last[0] && seq <= last[1])) return;
      last = [ms, seq];
      res.write(`id: ${e.summaryId}\ndata: ${JSON.stringify(presentEventSummary(sourceId, e, true))}\n\n`);
    };
    const live = (e: EmittedSummary) => send(e);
    const stopListening = engine.onEmitted(sourceId, live);
    if (last[0] !== Number.MAX_SAFE_INTEGER) {
      for (const r of engine.queries.sourceEventsAfter(sourceId, last[0], last[1], 100, channel)) {
        send({ sourceId, summaryId: r.summary_id, ms: r.ms, channel: r.channel, emitId: r.emit_id, event: JSON.parse(r.event), meta: JSON.parse(r.meta) });
      }
    } else {
      last = [0, -1];
    }
    const keepalive = setInterval(() => res.write(': keepalive\n\n'), SSE_KEEPALIVE_MS);
    const close = () => {
      clearInterval(keepalive);
      stopListening();
    };
    req.raw.on('close', close);
    res.on('error', close);
  };
  fastify.get('/v1/sources/:id/sse', handler);
  fastify.get('/sources/:id/sse', handler);
}
