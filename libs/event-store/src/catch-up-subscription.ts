import { CaughtUpWaiters } from './caught-up-waiters';
import type { BatchHandler, StoredEvent, SubscribeToAllOptions, Subscription } from './event-store.port';

/** What a catch-up subscription needs from a store whose positions have no holes in read-all order. */
export interface CatchUpSource {
  /** Events strictly after `after`, at most `maxCount`, in position order. */
  readAll(after: bigint, maxCount: number): StoredEvent[] | Promise<StoredEvent[]>;
  /** Position of the last event in the log; an event exists at that position. */
  headPosition(): bigint | Promise<bigint>;
  /** Calls `listener` after each commit; returns the unsubscribe function. */
  onAppended(listener: (headPosition: bigint) => void): () => void;
}

const DEFAULT_MAX_BATCH = 500;

/**
 * Catch-up subscription over `readAll` and an append notification: reads from the checkpoint in
 * batches, hands each batch to the handler and awaits it before reading the next, then sleeps
 * until the next append. Every event after the checkpoint is handed over exactly once, in
 * position order; a handler error stops the subscription (reported to `onError`, and by
 * `caughtUp()` rejecting). Do not await `stop()` from inside the handler: it waits for the
 * handler to finish.
 */
export class CatchUpSubscription implements Subscription {
  private current: bigint;
  private stopped = false;
  private appendsSeen = 0;
  /** The highest head an append notification named. */
  private notifiedHead = -1n;
  /** Set once a read came back empty: the catch-up from the checkpoint is over. */
  private caughtUpOnce = false;
  /** Set by `caughtUp()`: read even when every notified event is handled (see `run`). */
  private readWanted = false;
  private wake: (() => void) | undefined;
  private readonly waiters = new CaughtUpWaiters();
  private readonly maxBatch: number;
  private readonly unsubscribe: () => void;
  private readonly finished: Promise<void>;

  constructor(
    private readonly source: CatchUpSource,
    private readonly handler: BatchHandler,
    private readonly options: SubscribeToAllOptions = {},
    onStopped?: () => void,
  ) {
    this.current = options.after ?? 0n;
    this.maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH;
    if (!Number.isInteger(this.maxBatch) || this.maxBatch < 1) {
      throw new RangeError(`maxBatch must be a positive integer, got ${this.maxBatch}`);
    }
    this.unsubscribe = source.onAppended((head) => {
      this.appendsSeen++;
      if (head > this.notifiedHead) this.notifiedHead = head;
      // Asleep at or past the head (its owner folded the commit inline and skipped to it), the
      // loop would wake only to go back to sleep: a promise, its reactions and a turn of the loop
      // per commit and subscription, for nothing.
      if (head > this.current || this.readWanted) this.wake?.();
    });
    this.finished = this.run().finally(() => onStopped?.());
  }

  get position(): bigint {
    return this.current;
  }

  async caughtUp(): Promise<void> {
    const target = await this.source.headPosition();
    // The head may be ahead of every notification (a commit whose notification is still to
    // come): read it rather than wait for the notification.
    if (target > this.current) {
      this.readWanted = true;
      this.wake?.();
    }
    return this.waiters.wait(target, this.current);
  }

  /**
   * Moves the position over events its owner processed by other means (a store's inline fold)
   * when it stands exactly at `from`; a subscription elsewhere is left alone (its owner skips
   * what it already processed).
   */
  skipTo(from: bigint, to: bigint): void {
    if (this.current !== from || to <= from || this.stopped) return;
    this.current = to;
    this.waiters.progress(to);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.finished;
  }

  private async run(): Promise<void> {
    try {
      while (!this.stopped) {
        // Once caught up, a batch that reached the last notified head is not followed by a read
        // that would come back empty: the next commit's notification wakes the loop (commits
        // made meanwhile are read then, with it).
        if (this.caughtUpOnce && !this.readWanted && this.current >= this.notifiedHead) {
          await new Promise<void>((resolve) => (this.wake = resolve));
          this.wake = undefined;
          continue;
        }
        this.readWanted = false;
        // Counting notifications before the read closes the window between an empty read and
        // going to sleep: an append committed in between is noticed and read right away.
        const seen = this.appendsSeen;
        const batch = await this.source.readAll(this.current, this.maxBatch);
        if (this.stopped) break;
        if (batch.length === 0) {
          this.caughtUpOnce = true;
          if (this.appendsSeen === seen && !this.readWanted) {
            await new Promise<void>((resolve) => (this.wake = resolve));
            this.wake = undefined;
          }
          continue;
        }
        await this.handler(batch);
        this.current = batch[batch.length - 1].position;
        this.waiters.progress(this.current);
      }
    } catch (error) {
      this.waiters.fail(error);
      this.stopped = true;
      if (this.options.onError) {
        this.options.onError(error);
      } else {
        // Without onError a failing processor would otherwise stop without a trace.
        console.error('event-store subscription stopped: its handler failed', error);
      }
    } finally {
      this.unsubscribe();
      this.waiters.finish(this.current);
    }
  }
}
