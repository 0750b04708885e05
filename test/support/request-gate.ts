import { createServer, ServerResponse, Server } from 'node:http';
import { AddressInfo } from 'node:net';

/**
 * An HTTP server on 127.0.0.1 that holds every request until `open()` (then answers at once).
 * Components fetch it to stay provably in the middle of a run: `waitForHits(n)` resolves once n
 * requests arrived, i.e. n runs are inside their isolate right now.
 */
export class RequestGate {
  /** Requests received, held or answered. */
  hits = 0;
  private opened = false;
  private held: ServerResponse[] = [];
  private waiters: { n: number; resolve: () => void }[] = [];
  private server?: Server;
  private port = 0;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      req.resume();
      this.hits++;
      for (const w of this.waiters.filter((w) => this.hits >= w.n)) w.resolve();
      this.waiters = this.waiters.filter((w) => this.hits < w.n);
      if (this.opened) res.end('open');
      else this.held.push(res);
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.port = (this.server.address() as AddressInfo).port;
    return this.url;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/gate`;
  }

  /** Resolves once `n` requests arrived; rejects, saying how many did, after `timeoutMs`. */
  waitForHits(n: number, timeoutMs = 20_000): Promise<void> {
    if (this.hits >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${this.hits} of ${n} requests reached the gate in ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  /** Answers the held requests (those whose caller is still there) and every later one. */
  open(): void {
    this.opened = true;
    for (const res of this.held.splice(0)) if (!res.destroyed) res.end('open');
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server!.close(() => r()));
    this.server = undefined;
  }
}
