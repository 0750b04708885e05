import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request the receiver got, with the outcome of the independent signature check. */
export interface ReceivedDelivery {
  id: string;
  headers: Record<string, string>;
  body: string;
  json: unknown;
  verified: boolean;
  verifyError?: string;
  answered: number;
}

/**
 * A real webhook receiver on 127.0.0.1 that verifies every signature with the `standardwebhooks`
 * package (an implementation independent of ours). `respond` decides the status per request.
 */
export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  secrets: string[] = [];
  respond: (req: IncomingMessage, n: number) => number | Promise<number> = () => 200;
  private server?: Server;
  port = 0;

  async start(port = 0): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
        let verified = false;
        let verifyError: string | undefined;
        for (const s of this.secrets) {
          try {
            new Webhook(s).verify(body, headers);
            verified = true;
            break;
          } catch (err) {
            verifyError = (err as Error).message;
          }
        }
        let json: unknown;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        const status = await this.respond(req, this.received.length);
        this.received.push({ id: headers['webhook-id'], headers, body, json, verified, verifyError, answered: status });
        res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((r) => this.server!.listen(port, '127.0.0.1', () => r()));
    this.port = (this.server.address() as AddressInfo).port;
    return this.url;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Requests answered 2xx, by webhook-id. */
  deliveredIds(): string[] {
    return this.received.filter((r) => r.answered >= 200 && r.answered < 300).map((r) => r.id);
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server!.close(() => r()));
    this.server = undefined;
  }
}
