import type { EventStore, StoredEvent, Subscription } from '@app/event-store';
import { CheckpointStore } from './checkpoint-store';

/**
 * A processor fed by a catch-up subscription. `transactional` processors (projections) are
 * applied synchronously inside one SQLite transaction together with their checkpoint;
 * the others (side effects) are awaited and must be idempotent, keyed on event ids, because a
 * crash between their work and the checkpoint repeats the batch.
 */
export type CheckpointedProcessor =
  | { name: string; transactional: true; apply(events: StoredEvent[]): void; afterCommit?(): void; afterRollback?(): void }
  | { name: string; transactional: false; handle(events: StoredEvent[]): Promise<void> };

/** Runs one processor from its stored checkpoint; reports errors and stops rather than skipping events. */
export class ProcessorRunner {
  private subscription?: Subscription;
  private failed?: unknown;
  private readonly waiters: { position: bigint; resolve: () => void }[] = [];
  private _position = 0n;

  constructor(
    private readonly store: EventStore,
    private readonly checkpoints: CheckpointStore,
    readonly processor: CheckpointedProcessor,
    private readonly onError: (err: unknown) => void = (err) => console.error(`processor ${processor.name} failed`, err),
  ) {}

  /** Last position processed and checkpointed. */
  get position(): bigint {
    return this._position;
  }

  /** The error that stopped this processor, if any. */
  get error(): unknown {
    return this.failed;
  }

  start(): void {
    const p = this.processor;
    this._position = this.checkpoints.get(p.name);
    const db = this.checkpoints.db;
    const applyTx = p.transactional
      ? db.transaction((events: StoredEvent[], last: bigint) => {
          p.apply(events);
          this.checkpoints.set(p.name, last);
        })
      : undefined;
    this.subscription = this.store.subscribeToAll(
      async (events) => {
        const last = events[events.length - 1].position;
        if (applyTx) {
          try {
            applyTx(events, last);
          } catch (err) {
            if (p.transactional) p.afterRollback?.();
            throw err;
          }
          if (p.transactional) p.afterCommit?.();
        }
        else {
          await (p as { handle(e: StoredEvent[]): Promise<void> }).handle(events);
          this.checkpoints.set(p.name, last);
        }
        this._position = last;
        this.releaseWaiters();
      },
      {
        after: this._position,
        onError: (err) => {
          this.failed = err;
          this.onError(err);
        },
      },
    );
  }

  /** Resolves once every event appended before this call is processed. */
  async caughtUp(): Promise<void> {
    await this.subscription?.caughtUp();
  }

  /** Resolves once the processor has processed the log up to `position`. */
  waitFor(position: bigint): Promise<void> {
    if (this._position >= position) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ position, resolve }));
  }

  async stop(): Promise<void> {
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
