import type { EventStore, InlineFold, StoredEvent, Subscription } from '@app/event-store';
import { CheckpointStore, FOLLOWS_LOG } from './checkpoint-store';
import { ProjectionFailedError } from './projection-failed.error';

/**
 * A processor fed by a catch-up subscription. `transactional` processors (projections) are
 * applied synchronously inside one SQLite transaction together with their checkpoint, and
 * `afterCommit` gets the batch that committed (side effects that must follow durable read
 * models hang there); the others (side effects) are awaited and must be idempotent, keyed on
 * event ids, because a crash between their work and the checkpoint repeats the batch.
 */
export type CheckpointedProcessor =
  | { name: string; transactional: true; apply(events: StoredEvent[]): void; afterCommit?(events: StoredEvent[]): void; afterRollback?(): void }
  | { name: string; transactional: false; handle(events: StoredEvent[]): Promise<void> };

/** Backoff between attempts to resume a failed processor: first delay, doubled up to the cap. */
export interface RetryBackoff {
  initialMs: number;
  maxMs: number;
}

const DEFAULT_BACKOFF: RetryBackoff = { initialMs: 100, maxMs: 5000 };

interface Waiter {
  position: bigint;
  resolve: () => void;
  reject: (err: ProjectionFailedError) => void;
}

/**
 * Runs one processor from its stored checkpoint. It never skips events: a batch that fails is
 * rolled back, the processor is marked failed (`error`), everyone waiting on it is rejected with
 * a `ProjectionFailedError`, and the runner resumes from its checkpoint after a backoff (100 ms
 * doubling to 5 s by default) until the batch applies, which clears the error.
 */
export class ProcessorRunner {
  private subscription?: Subscription;
  private failed?: ProjectionFailedError;
  private readonly waiters: Waiter[] = [];
  private _position = 0n;
  private retryTimer?: NodeJS.Timeout;
  private retryDelayMs: number;
  private stopped = false;
  private readonly backoff: RetryBackoff;

  constructor(
    private readonly store: EventStore,
    private readonly checkpoints: CheckpointStore,
    readonly processor: CheckpointedProcessor,
    private readonly onError: (err: unknown) => void = (err) => console.error(`processor ${processor.name} failed`, err),
    backoff: Partial<RetryBackoff> = {},
  ) {
    this.backoff = { ...DEFAULT_BACKOFF, ...backoff };
    this.retryDelayMs = this.backoff.initialMs;
  }

  /** Last position processed and checkpointed. */
  get position(): bigint {
    return this._position;
  }

  /** The failure this processor has not yet recovered from (a `ProjectionFailedError` naming the cause), if any. */
  get error(): ProjectionFailedError | undefined {
    return this.failed;
  }

  start(): void {
    this.stopped = false;
    const stored = this.checkpoints.get(this.processor.name);
    this.follows = stored === FOLLOWS_LOG;
    this._position = this.follows ? this.logHead() : stored;
    this.subscribe();
    this.foldInline();
  }

  /**
   * Whether the stored checkpoint is {@link FOLLOWS_LOG} (as committed): the processor folded
   * every group inline since it wrote that, so its position is the log's head. The first inline
   * fold writes it, once, instead of a position in every commit (a statement and a page of the
   * WAL per commit: at 200 events/s one page in 18); a group the fold does not apply
   * (`InlineFold.unfolded`), a catch-up through the subscription, and `stop` write the real
   * position back.
   */
  private follows = false;
  /** What the transaction in progress wrote ({@link FOLLOWS_LOG} or a position), until it ends. */
  private writing?: 'follows' | 'position';

  /** The log's head, for a checkpoint that follows the log (only a store that folds inline writes one). */
  private logHead(): bigint {
    const host = this.store as EventStore & { committedHead?(): bigint };
    if (typeof host.committedHead !== 'function') {
      throw new Error(`processor ${this.processor.name}: its checkpoint follows the log, and this event store cannot say where the log ends`);
    }
    return host.committedHead();
  }

  /** Writes the real position as the checkpoint (inside the caller's transaction). */
  private writePosition(position: bigint): void {
    this.checkpoints.set(this.processor.name, position);
    this.writing = 'position';
  }

  /** Applies what the transaction that ended wrote to {@link follows}. */
  private settleWriting(committed: boolean): void {
    if (committed && this.writing) this.follows = this.writing === 'follows';
    this.writing = undefined;
  }

  /**
   * A transactional processor on a store that can fold inside its writer's transaction (SQLite)
   * is folded there once caught up: a group's events, the read models and the checkpoint commit
   * together. The subscription stays for catching up (start, after a failure); it skips what
   * was folded inline.
   */
  private foldInline(): void {
    const p = this.processor;
    const host = this.store as EventStore & { setInlineFold?(fold: InlineFold | undefined): void };
    if (!p.transactional || typeof host.setInlineFold !== 'function') return;
    host.setInlineFold({
      position: () => (this.failed || this.stopped ? -1n : this._position),
      apply: (events) => {
        p.apply(events);
        if (!this.follows) {
          this.checkpoints.set(p.name, FOLLOWS_LOG);
          this.writing = 'follows';
        }
      },
      unfolded: () => {
        if (this.follows) this.writePosition(this._position);
      },
      unfoldedSettled: (committed) => this.settleWriting(committed),
      settled: (events, committed) => {
        this.settleWriting(committed);
        if (!committed) {
          p.afterRollback?.();
          return;
        }
        const from = this._position;
        const last = events[events.length - 1].position;
        this._position = last;
        (this.subscription as Subscription & { skipTo?(from: bigint, to: bigint): void } | undefined)?.skipTo?.(from, last);
        try {
          p.afterCommit?.(events);
        } finally {
          // The read models are committed: whoever waits for them goes on even if a side effect threw.
          this.releaseWaiters();
        }
      },
    });
    this.detachInline = () => host.setInlineFold!(undefined);
  }

  private detachInline?: () => void;

  private subscribe(): void {
    const p = this.processor;
    const db = this.checkpoints.db;
    const applyTx = p.transactional
      ? db.transaction((events: StoredEvent[], last: bigint) => {
          p.apply(events);
          this.writePosition(last);
        })
      : undefined;
    this.subscription = this.store.subscribeToAll(
      async (batch) => {
        const last = batch[batch.length - 1].position;
        // Events folded inline meanwhile (see foldInline) are not applied twice.
        const events = batch[0].position > this._position ? batch : batch.filter((e) => e.position > this._position);
        if (events.length === 0) return;
        if (applyTx) {
          try {
            applyTx(events, last);
            this.settleWriting(true);
          } catch (err) {
            this.settleWriting(false);
            if (p.transactional) p.afterRollback?.();
            throw err;
          }
          this.recovered();
          if (p.transactional) p.afterCommit?.(events);
        } else {
          await (p as { handle(e: StoredEvent[]): Promise<void> }).handle(events);
          this.checkpoints.set(p.name, last);
          this.recovered();
        }
        this._position = last;
        this.releaseWaiters();
      },
      { after: this._position, onError: (err) => this.fail(err) },
    );
  }

  /** Marks the processor failed, rejects every waiter and schedules a resume from the checkpoint. */
  private fail(err: unknown): void {
    this.failed = new ProjectionFailedError(this.processor.name, err);
    this.onError(err);
    for (const w of this.waiters.splice(0)) w.reject(this.failed);
    if (this.stopped) return;
    const delay = this.retryDelayMs;
    this.retryDelayMs = Math.min(this.retryDelayMs * 2, this.backoff.maxMs);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.stopped) this.subscribe();
    }, delay);
    this.retryTimer.unref();
  }

  /** A batch applied: the failure (if any) is over and the next one starts from the first delay again. */
  private recovered(): void {
    if (this.failed) console.warn(`processor ${this.processor.name} recovered`);
    this.failed = undefined;
    this.retryDelayMs = this.backoff.initialMs;
  }

  /** Resolves once every event appended before this call is processed; rejects if the processor fails first. */
  async caughtUp(): Promise<void> {
    if (this.failed) throw this.failed;
    await this.subscription?.caughtUp();
  }

  /**
   * Resolves once the processor has processed the log up to `position`; rejects with the
   * `ProjectionFailedError` as soon as the processor fails (at once if it is failed now).
   */
  waitFor(position: bigint): Promise<void> {
    if (this._position >= position) return Promise.resolve();
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => this.waiters.push({ position, resolve, reject }));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.detachInline?.();
    this.detachInline = undefined;
    // Appends may commit after this without the fold: the checkpoint says where it really is.
    // (The store's groups are written synchronously: none is in progress here.)
    if (this.follows) {
      this.writePosition(this._position);
      this.settleWriting(true);
    }
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    await this.subscription?.stop();
    for (const w of this.waiters.splice(0)) w.resolve();
  }

  private releaseWaiters(): void {
    if (this.waiters.length === 0) return;
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (this.waiters[i].position <= this._position) {
        this.waiters[i].resolve();
        this.waiters.splice(i, 1);
      }
    }
  }
}
