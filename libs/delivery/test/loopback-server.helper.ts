import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** A request as the test server saw it. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Which connection (1-based, in order of arrival) carried it. */
  connection: number;
}

/** A real HTTP server on 127.0.0.1 with an ephemeral port, recording what reaches it. */
export interface LoopbackServer {
  port: number;
  url: (path?: string) => string;
  requests: ReceivedRequest[];
  connections: () => number;
  close: () => Promise<void>;
}

/** Starts a server whose handler sees each request after its body has been read. */
export async function startLoopbackServer(
  handle: (req: http.IncomingMessage, res: http.ServerResponse, received: ReceivedRequest) => void,
): Promise<LoopbackServer> {
  const requests: ReceivedRequest[] = [];
  const sockets = new Map<Socket, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        connection: sockets.get(req.socket) ?? 0,
      };
      requests.push(received);
      handle(req, res, received);
    });
  });
  server.on('connection', (socket) => sockets.set(socket, sockets.size + 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    requests,
    connections: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port on 127.0.0.1 where nothing listens (bound, then released). */
export async function closedLoopbackPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
