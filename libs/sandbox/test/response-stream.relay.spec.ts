import { EgressError, OutboundBodyHandlers, OutboundStreamResponse } from '@app/delivery';
import { ResponseStreamRelay } from '../src/response-stream.relay';

/** A response body fed by the test, recording whether the relay keeps the socket paused. */
class ScriptedBody implements OutboundStreamResponse {
  status = 200;
  headers = {};
  handlers: OutboundBodyHandlers | null = null;
  flowing = false;
  aborted = false;

  read(handlers: OutboundBodyHandlers): void {
    this.handlers = handlers;
    this.flowing = true;
  }

  resume(): void {
    this.flowing = true;
  }

  abort(): void {
    this.aborted = true;
  }

  /** What a socket does: deliver a chunk while flowing; `data` returning false pauses it. */
  push(text: string): void {
    if (!this.flowing) throw new Error('the relay let the socket read while paused');
    if (!this.handlers!.data(Buffer.from(text))) this.flowing = false;
  }
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('ResponseStreamRelay', () => {
  it('hands chunks over one at a time, keeps the socket paused while the guest buffer is full, and ends once', async () => {
    const body = new ScriptedBody();
    const delivered: string[] = [];
    let guestWantsMore = true;
    const ends: Array<EgressError | null> = [];
    let closed = 0;
    const relay = new ResponseStreamRelay(body, {
      chunk: async (bytes) => {
        delivered.push(bytes.toString());
        return guestWantsMore;
      },
      end: async (error) => {
        ends.push(error);
      },
    }, () => closed++);
    relay.start();

    body.push('a');
    await tick();
    expect(delivered).toEqual(['a']);
    expect(body.flowing).toBe(true);

    guestWantsMore = false;
    body.push('b');
    await tick();
    expect(delivered).toEqual(['a', 'b']);
    // The guest's buffer is full: the socket stays paused, nothing more is read.
    expect(body.flowing).toBe(false);
    expect(() => body.push('c')).toThrow('paused');

    guestWantsMore = true;
    relay.resume();
    await tick();
    expect(body.flowing).toBe(true);
    body.push('c');
    body.handlers!.end();
    await tick();
    expect(delivered).toEqual(['a', 'b', 'c']);
    expect(ends).toEqual([null]);
    expect(closed).toBe(1);
  });

  it('passes a failure after the chunks before it; a cancel drops the connection of a body still open', async () => {
    const body = new ScriptedBody();
    const seen: string[] = [];
    let closed = 0;
    const relay = new ResponseStreamRelay(body, {
      chunk: async (bytes) => {
        seen.push(bytes.toString());
        return true;
      },
      end: async (error) => {
        seen.push(`end:${error?.code ?? 'ok'}`);
      },
    }, () => closed++);
    relay.start();
    body.push('x');
    body.handlers!.error(new EgressError('too big', 'too_large'));
    await tick();
    expect(seen).toEqual(['x', 'end:too_large']);
    expect(closed).toBe(1);
    // Over already: a late cancel (the run ending) changes nothing.
    relay.cancel();
    expect(closed).toBe(1);

    const other = new ScriptedBody();
    let otherClosed = 0;
    const cancelled = new ResponseStreamRelay(other, { chunk: async () => true, end: async () => undefined }, () => otherClosed++);
    cancelled.start();
    cancelled.cancel();
    expect(other.aborted).toBe(true);
    expect(otherClosed).toBe(1);
  });

  it('cancels when the guest can no longer take a chunk (its run ended)', async () => {
    const body = new ScriptedBody();
    let closed = 0;
    const relay = new ResponseStreamRelay(body, {
      chunk: async () => {
        throw new Error('the run is over');
      },
      end: async () => undefined,
    }, () => closed++);
    relay.start();
    body.push('x');
    await tick();
    expect(body.aborted).toBe(true);
    expect(closed).toBe(1);
  });
});
