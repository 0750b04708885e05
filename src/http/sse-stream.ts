import type { FastifyReply, FastifyRequest } from 'fastify';

/** How often an idle stream gets a comment line, so proxies keep it open. */
export const SSE_KEEPALIVE_MS = 15_000;

/**
 * Takes the reply over as a server-sent-events stream: the headers, a first comment, and a
 * comment every {@link SSE_KEEPALIVE_MS} while nothing else is sent. `onClose` runs once, when
 * the client goes, the socket fails or `end` is called (stop listening there). `write` sends raw
 * SSE text (`id:` / `event:` / `data:` lines ending with a blank line); `end` closes the stream.
 */
export function openSseStream(req: FastifyRequest, reply: FastifyReply, onClose: () => void): { write(text: string): void; end(): void } {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.write(': connected\n\n');
  const keepalive = setInterval(() => res.write(': keepalive\n\n'), SSE_KEEPALIVE_MS);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(keepalive);
    onClose();
  };
  req.raw.on('close', close);
  res.on('error', close);
  return {
    write(text) {
      if (!closed) res.write(text);
    },
    end() {
      if (closed) return;
      close();
      res.end();
    },
  };
}
