import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SluiceEngine, WorkflowSseMessage } from '@app/engine';
import { errorBody } from '../http/api-exception.filter';
import { accountFromAuthorization } from '../http/auth.guard';
import { openSseStream } from '../http/sse-stream';

/**
 * `GET /v1/workflows/{id}/sse?channel=`: the workflow's `$.send.sse` payloads, live, as
 * server-sent events (`event:` the channel, `data:` `{channel, payload, run_id, ts}`). Live only:
 * sse sends are recorded in the run, not replayed.
 */
export function registerWorkflowSse(fastify: FastifyInstance, engine: SluiceEngine): void {
  fastify.get('/v1/workflows/:id/sse', (req: FastifyRequest<{ Params: { id: string }; Querystring: { channel?: string } }>, reply: FastifyReply) => {
    let workflowId: string;
    try {
      const accountId = accountFromAuthorization(engine.queries, req.headers.authorization);
      workflowId = engine.queries.ownWorkflow(accountId, req.params.id).id;
    } catch (err) {
      const { status, body } = errorBody(err);
      return reply.status(status).send(body);
    }
    const channel = typeof req.query.channel === 'string' && req.query.channel !== '' ? req.query.channel : undefined;
    let stop = () => {};
    const { write } = openSseStream(req, reply, () => stop());
    stop = engine.onWorkflowSse(workflowId, (m: WorkflowSseMessage) => {
      if (channel !== undefined && m.channel !== channel) return;
      write(`event: ${m.channel.replace(/[\r\n]/g, ' ')}\ndata: ${JSON.stringify({ channel: m.channel, payload: m.payload, run_id: m.runId, ts: m.ts })}\n\n`);
    });
  });
}
