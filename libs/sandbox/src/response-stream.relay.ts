import type { EgressError, OutboundStreamResponse } from '@app/delivery';

/** How a relay reaches the guest: each call is one entry into the isolate. */
export interface RelayTarget {
  /** Hands one chunk to the guest; resolves to true when the guest wants the next one at once. */
  chunk(bytes: Buffer): Promise<boolean>;
  /** Ends the body in the guest: `null` for a complete body, else the failure. */
  end(error: EgressError | null): Promise<void>;
}

/**
 * Moves one streamed response body from the host's socket into the guest, one chunk at a time:
 * the socket stays paused while a chunk is being handed over and while the guest's stream buffer
 * is full (it says so by answering false, and asks again with `resume()`). So the host never
 * holds more than one chunk per stream, the guest never more than its stream's high-water mark
 * plus one chunk, and a slow reader slows the server down through TCP, not through memory.
 */
export class ResponseStreamRelay {
  private readonly queue: Array<Buffer | { end: EgressError | null }> = [];
  private wanted = true;
  private pumping = false;
  private closed = false;

  constructor(
    private readonly response: OutboundStreamResponse,
    private readonly target: RelayTarget,
    /** Called once when the body ended, failed or was cancelled. */
    private readonly onClosed: () => void,
  ) {}

  /** Starts reading the body. */
  start(): void {
    this.response.read({
      data: (chunk) => {
        this.queue.push(chunk);
        void this.pump();
        return false;
      },
      end: () => {
        this.queue.push({ end: null });
        void this.pump();
      },
      error: (error) => {
        this.queue.push({ end: error });
        void this.pump();
      },
    });
  }

  /** The guest read from a full buffer: send more. */
  resume(): void {
    this.wanted = true;
    void this.pump();
  }

  /** The guest no longer wants the body (destroyed stream, aborted request, run over). */
  cancel(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.response.abort();
    this.onClosed();
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.closed && this.queue.length > 0) {
        const next = this.queue[0];
        if (Buffer.isBuffer(next)) {
          if (!this.wanted) return;
          this.queue.shift();
          this.wanted = await this.target.chunk(next);
        } else {
          this.queue.shift();
          this.closed = true;
          this.onClosed();
          await this.target.end(next.end);
        }
      }
      if (!this.closed && this.wanted) this.response.resume();
    } catch {
      // The guest could not take the chunk (its run ended, its isolate is gone): nobody reads on.
      this.cancel();
    } finally {
      this.pumping = false;
    }
  }
}
