import type { FastifyReply, FastifyRequest } from 'fastify';

/** How often an idle stream gets a comment line, so proxies keep it open. */
export const SSE_KEEPALIVE_MS = 15_000;

/** Open streams by the server (Fastify instance) that serves them, so its shutdown can end them. */
const openStreams = new WeakMap<object, Set<{ end(): void }>>();

/**
 * Takes the reply over as a server-sent-events stream: the headers, a first comment, and a
 * comment every {@link SSE_KEEPALIVE_MS} while nothing else is sent. `onClose` runs once, when
 * the client goes, the socket fails, `end` is called or the server shuts down
 * ({@link endSseStreams}; stop listening there). `write` sends raw SSE text (`id:` / `event:` /
 * `data:` lines ending with a blank line); `end` closes the stream.
 */
export function openSseStream(req: FastifyRequest, reply: FastifyReply, onClose: () => void): { write(text: string): void; end(): void } {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.write(': connected\n\n');
  const keepalive = setInterval(() => res.write(': keepalive\n\n'), SSE_KEEPALIVE_MS);
  let streams = openStreams.get(req.server);
  if (!streams) openStreams.set(req.server, (streams = new Set()));
  const open = streams;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(keepalive);
    open.delete(stream);
    onClose();
  };
  const stream = {
    write(text: string) {
      if (!closed) res.write(text);
    },
    end() {
      if (closed) return;
      close();
      res.end();
    },
  };
  open.add(stream);
  req.raw.on('close', close);
  res.on('error', close);
  return stream;
}

/**
 * Ends every stream `server` serves: a graceful stop would otherwise wait for each client to
 * leave (one that never does held SIGTERM for good). A client that reconnects meets the server
 * gone, or its successor, and resumes with `Last-Event-ID`.
 */
export function endSseStreams(server: object): void {
  const streams = openStreams.get(server);
  if (!streams) return;
  for (const stream of [...streams]) stream.end();
}
