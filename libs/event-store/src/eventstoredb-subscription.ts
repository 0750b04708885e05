import type { AllStreamResolvedEvent, AllStreamSubscription, EventStoreDBClient } from '@eventstore/db-client';
import { CaughtUpWaiters } from './caught-up-waiters';
import { eventStoreDb } from './eventstoredb-client';
import { StoreUnavailableError } from './errors';
import type { BatchHandler, StoredEvent, SubscribeToAllOptions, Subscription } from './event-store.port';
import { isApplicationEvent, toPortError, toStoredEvent } from './eventstoredb-events';

const DEFAULT_MAX_BATCH = 500;

/**
 * A catch-up subscription to `$all` on EventStoreDB, without system events. Events the server
 * pushes while the handler runs are buffered and handed over as the next batch, so batches are
 * in commit order and each awaited before the next; the server stream is paused when the
 * buffer holds several batches. A handler or connection error stops it (reported to
 * `onError`, and by `caughtUp()` rejecting); resubscribe from the checkpoint to resume.
 */
export class EventStoreDbSubscription implements Subscription {
  private current: bigint;
  private lastReceived: bigint;
  private buffer: StoredEvent[] = [];
  private draining: Promise<void> | undefined;
  private stopped = false;
  private readonly waiters = new CaughtUpWaiters();
  private readonly maxBatch: number;
  private readonly serverStream: AllStreamSubscription;
  private closing: Promise<void> | undefined;

  constructor(
    client: EventStoreDBClient,
    private readonly handler: BatchHandler,
    private readonly headPosition: () => Promise<bigint>,
    private readonly options: SubscribeToAllOptions = {},
    private readonly onStopped?: () => void,
  ) {
    this.current = options.after ?? 0n;
    this.lastReceived = this.current;
    this.maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH;
    if (!Number.isInteger(this.maxBatch) || this.maxBatch < 1) {
      throw new RangeError(`maxBatch must be a positive integer, got ${this.maxBatch}`);
    }
    const after = this.current;
    const { excludeSystemEvents, START } = eventStoreDb();
    this.serverStream = client.subscribeToAll({
      // Commit and prepare positions are equal for events appended through gRPC.
      fromPosition: after > 0n ? { commit: after, prepare: after } : START,
      filter: excludeSystemEvents(),
    });
    this.serverStream.on('data', (resolved: AllStreamResolvedEvent) => this.receive(resolved));
    this.serverStream.on('error', (error: Error) => this.fail(toPortError(error)));
    this.serverStream.on('end', () => this.fail(new StoreUnavailableError('EventStoreDB ended the subscription')));
  }

  get position(): bigint {
    return this.current;
  }

  async caughtUp(): Promise<void> {
    const target = await this.headPosition();
    return this.waiters.wait(target, this.current);
  }

  async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.closing = this.shutDown();
    }
    await this.closing;
  }

  private receive(resolved: AllStreamResolvedEvent): void {
    if (this.stopped || !isApplicationEvent(resolved)) return;
    let event: StoredEvent;
    try {
      event = toStoredEvent(resolved);
    } catch (error) {
      this.fail(error);
      return;
    }
    // The start position is inclusive on some servers; a checkpoint means "strictly after".
    if (event.position <= this.lastReceived) return;
    this.lastReceived = event.position;
    this.buffer.push(event);
    if (this.buffer.length >= this.maxBatch * 4) this.serverStream.pause();
    if (!this.draining) {
      // Deferred a turn so events arriving in the same network read form one batch.
      this.draining = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.drain());
    }
  }

  private async drain(): Promise<void> {
    try {
      while (this.buffer.length > 0 && !this.stopped) {
        const batch = this.buffer.length <= this.maxBatch ? this.buffer : this.buffer.slice(0, this.maxBatch);
        this.buffer = batch === this.buffer ? [] : this.buffer.slice(this.maxBatch);
        await this.handler(batch);
        this.current = batch[batch.length - 1].position;
        this.waiters.progress(this.current);
        if (this.serverStream.isPaused() && this.buffer.length < this.maxBatch) this.serverStream.resume();
      }
    } catch (error) {
      this.fail(error);
    } finally {
      this.draining = undefined;
    }
  }

  private fail(error: unknown): void {
    if (this.stopped) return;
    this.waiters.fail(error);
    this.stopped = true;
    if (this.options.onError) {
      this.options.onError(error);
    } else {
      // Without onError a failing processor would otherwise stop without a trace.
      console.error('event-store subscription stopped: it failed', error);
    }
    this.closing = this.shutDown();
  }

  private async shutDown(): Promise<void> {
    try {
      await this.serverStream.unsubscribe();
    } catch {
      // The call is already gone (that may be why we stop); there is nothing left to cancel.
    } finally {
      await this.draining;
      this.waiters.finish(this.current);
      this.onStopped?.();
    }
  }
}
