import { connect, type Socket } from 'node:net';
import { eventually } from './sluice-process';

/** A raw HTTP/1.1 connection for tests: writes bytes as given and collects everything the server sends. */
export class RawConnection {
  readonly socket: Socket;
  received = Buffer.alloc(0);
  closed = false;
  private readonly opened: Promise<void>;

  /** `allowHalfOpen`: the client may end its side and still read, as a browser or fetch leaving a stream does. */
  constructor(port: number, opts: { allowHalfOpen?: boolean } = {}) {
    this.socket = connect({ port, host: '127.0.0.1', allowHalfOpen: opts.allowHalfOpen === true });
    this.socket.setNoDelay(true);
    this.opened = new Promise((r) => this.socket.once('connect', () => r()));
    this.socket.on('data', (d: Buffer) => (this.received = Buffer.concat([this.received, d])));
    this.socket.on('error', () => undefined);
    this.socket.on('close', () => (this.closed = true));
  }

  /** Writes each piece in a send of its own, 2 ms apart. */
  write(...pieces: (string | Buffer)[]): Promise<void> {
    return this.writeApart(2, pieces);
  }

  /** The same with `ms` between pieces (0: the next turn of the loop). */
  async writeApart(ms: number, pieces: (string | Buffer)[]): Promise<void> {
    await this.opened;
    for (const piece of pieces) {
      this.socket.write(piece);
      if (pieces.length > 1) await new Promise((r) => (ms === 0 ? setImmediate(r) : setTimeout(r, ms)));
    }
  }

  /** Everything received so far, as latin1 text. */
  text(): string {
    return this.received.toString('latin1');
  }

  /** Waits until `done()` holds, `ms` at most, and says whether it did. */
  async until(done: () => boolean, ms = 5_000): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    return done();
  }

  /** Answers so far (a status line each). */
  answers(): number {
    return this.received.toString('latin1').match(/HTTP\/1\.1 \d{3} [^\r\n]*\r\n/g)?.length ?? 0;
  }

  /** The bodies of the answers so far, in order, as UTF-8 (for answers that all have a Content-Length). */
  bodies(): string[] {
    const out: string[] = [];
    let at = 0;
    for (;;) {
      const end = this.received.indexOf('\r\n\r\n', at);
      if (end < 0) return out;
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(this.received.toString('latin1', at, end))?.[1] ?? 0);
      if (this.received.length < end + 4 + length) return out;
      out.push(this.received.toString('utf8', end + 4, end + 4 + length));
      at = end + 4 + length;
    }
  }

  /** Waits for `n` answers or the close, then a little more for anything unexpected. */
  async settle(n: number): Promise<string> {
    await eventually(async () => (this.answers() >= n || this.closed ? true : undefined), 15_000);
    await new Promise((r) => setTimeout(r, 80));
    return this.received.toString('latin1');
  }
}
