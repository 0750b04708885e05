import type { ListenerDispatched } from '@app/domain';
import type { ListenerDispatch } from '@app/projections';
import type { WorkflowListenerPort } from './listener-ports';

/** What the dispatcher needs from the engine (the runtime wires it; tests give their own). */
export interface ListenerDispatcherDeps {
  /** The listening source as the read models hold it (`undefined`: unknown or gone). */
  source(sourceId: string): { status: string; active: number } | undefined;
  /**
   * Runs the listening source for the dispatch: trigger `event`, `requestId` = the dispatch id
   * (so the source's own state refuses a second run of it), `hops` carried by the run's emits.
   * Resolves once the run is durable; `false` when the source refused to run it now.
   */
  runSource(sourceId: string, event: unknown, dispatchId: string, hops: number): Promise<boolean>;
  /** The workflows' side, once the workflows module provides it. */
  workflows(): WorkflowListenerPort | undefined;
  /** Appends `listener.dispatched.v1` (id = the dispatch id, so a repeat writes nothing). */
  record(d: ListenerDispatched): Promise<void>;
  /** Whether the dispatch is still pending in the read model. */
  isPending(dispatchId: string): boolean;
  /**
   * Pending dispatches, oldest first, at most `limit`, once the read models include every
   * append so far (so dispatches that just finished are no longer among them).
   */
  pending(limit: number): Promise<ListenerDispatch[]>;
}

/**
 * Dispatches in flight at once. More wait in the read model (durable) and are read back, oldest
 * first, as these finish, so a flood of emits never builds an unbounded queue in memory.
 */
export const MAX_DISPATCHES_IN_FLIGHT = 256;

/** First delay before a dispatch that could not be handed over is tried again; doubles up to the max. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 30_000;

/**
 * Hands emits to the sources and workflows that listen to them. The work list is the
 * listener-dispatches read model (a pure function of the log); this class only moves rows to
 * their listener and keeps nothing that a crash could lose:
 * - a `dc_` listener runs its source with the dispatch id as request id: the run's
 *   `source.run_completed.v1` settles the row, and the source state's handled requests make a
 *   repeated dispatch (after a crash, or the fast path racing the start-up scan) a no-op;
 * - a `p_` listener goes to {@link WorkflowListenerPort.startFromEmit} (idempotent per emit):
 *   the run's start names the dispatch and settles the row in its commit; when it was started
 *   before (or the workflow does not listen), `listener.dispatched.v1` settles it;
 * - an inactive or deleted source listener gets `listener.dispatched.v1` `skipped`.
 * A dispatch that cannot be handed over now (the source is mid-update, the append failed, no
 * workflow port yet) is tried again later while its row is pending. At most
 * {@link MAX_DISPATCHES_IN_FLIGHT} are in flight; past that, new rows wait in the read model
 * (the fast path is off) until a refill in log order has caught up with them.
 */
export class ListenerDispatcher {
  private readonly inFlight = new Set<string>();
  private readonly retries = new Map<string, NodeJS.Timeout>();
  private readonly work = new Set<Promise<void>>();
  private stopped = false;
  private started = false;
  /** Rows were left in the read model for want of room: new ones wait behind them there. */
  private backlogged = false;
  private refilling = false;
  /** A fast-path dispatch was left in the read model while a refill was reading it. */
  private leftDuringRefill = false;

  constructor(private readonly deps: ListenerDispatcherDeps) {}

  /** Hands every pending dispatch over (after start-up recovery), then follows new ones. */
  start(): void {
    this.started = true;
    this.backlogged = true;
    this.refill();
  }

  /** A dispatch just committed by the read models (the fast path). */
  enqueue(d: ListenerDispatch): void {
    if (this.stopped || !this.started) return;
    if (this.backlogged || this.inFlight.size >= MAX_DISPATCHES_IN_FLIGHT) {
      this.backlogged = true;
      if (this.refilling) this.leftDuringRefill = true;
      return;
    }
    this.begin(d, 0);
  }

  /** Reads pending rows back in log order while there is room; the backlog is over once they all fit. */
  private refill(): void {
    if (this.stopped || !this.backlogged || this.refilling) return;
    this.refilling = true;
    this.leftDuringRefill = false;
    const job = this.refillOnce().then(
      () => {
        this.refilling = false;
        if (this.backlogged && this.inFlight.size <= MAX_DISPATCHES_IN_FLIGHT / 2) this.refill();
      },
      (err) => {
        this.refilling = false;
        console.error('reading pending listener dispatches failed', err);
      },
    );
    this.work.add(job);
    void job.finally(() => this.work.delete(job));
  }

  private async refillOnce(): Promise<void> {
    const room = MAX_DISPATCHES_IN_FLIGHT - this.inFlight.size;
    if (room <= 0) return;
    // Rows in flight or waiting for a retry are still pending: read past them.
    const limit = room + this.inFlight.size + this.retries.size;
    const rows = await this.deps.pending(limit);
    if (this.stopped) return;
    const fresh = rows.filter((d) => !this.inFlight.has(d.dispatchId) && !this.retries.has(d.dispatchId));
    for (const d of fresh.slice(0, room)) this.begin(d, 0);
    if (rows.length < limit && fresh.length <= room && !this.leftDuringRefill) this.backlogged = false;
  }

  private begin(d: ListenerDispatch, attempt: number): void {
    if (this.stopped || this.inFlight.has(d.dispatchId)) return;
    this.inFlight.add(d.dispatchId);
    const job = this.dispatch(d).then(
      (done) => this.finish(d, done, attempt),
      (err) => {
        console.error(`dispatch of ${d.emitId} to ${d.listenerId} failed; retrying`, err);
        this.finish(d, false, attempt);
      },
    );
    this.work.add(job);
    void job.finally(() => this.work.delete(job));
  }

  /** Stops retrying and waits for dispatches in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.retries.values()) clearTimeout(t);
    this.retries.clear();
    await Promise.allSettled([...this.work]);
  }

  private finish(d: ListenerDispatch, done: boolean, attempt: number): void {
    this.inFlight.delete(d.dispatchId);
    if (!done && !this.stopped) {
      const delay = Math.min(RETRY_FIRST_MS * 2 ** attempt, RETRY_MAX_MS);
      const timer = setTimeout(() => {
        this.retries.delete(d.dispatchId);
        if (this.deps.isPending(d.dispatchId)) this.begin(d, attempt + 1);
      }, delay);
      timer.unref();
      this.retries.set(d.dispatchId, timer);
    }
    // After the retry is set, so a refill does not pick the row that just failed.
    if (this.backlogged && this.inFlight.size <= MAX_DISPATCHES_IN_FLIGHT / 2) this.refill();
  }

  /** Hands one dispatch to its listener; `false` when it has to be tried again later. */
  private dispatch(d: ListenerDispatch): Promise<boolean> {
    // Synchronous up to the actor's mailbox: dispatches to one source keep their emit order.
    if (d.listenerId.startsWith('dc_')) return this.toSource(d);
    if (d.listenerId.startsWith('p_')) return this.toWorkflow(d);
    return this.skip(d, `listener ${d.listenerId} cannot hear emits`);
  }

  private async toSource(d: ListenerDispatch): Promise<boolean> {
    const src = this.deps.source(d.listenerId);
    if (!src || src.status === 'deleted' || src.status === 'failed') return this.skip(d, `source ${d.listenerId} is gone`);
    if (src.status !== 'deployed') return false;
    if (src.active !== 1) return this.skip(d, `source ${d.listenerId} is inactive`);
    const ran = await this.deps.runSource(d.listenerId, JSON.parse(d.body) as unknown, d.dispatchId, d.hops + 1);
    // Refused: already run (the row goes once its record is projected) or mid-transition. Either
    // way the row is looked at again later while it is still pending.
    return ran;
  }

  private async toWorkflow(d: ListenerDispatch): Promise<boolean> {
    const port = this.deps.workflows();
    if (!port) return false;
    const outcome = await port.startFromEmit(d.listenerId, d.accountId, JSON.parse(d.body) as unknown, {
      emitterId: d.emitterId, emitId: d.emitId, eventName: d.eventName, ts: d.ts, hops: d.hops + 1, dispatchId: d.dispatchId,
    });
    // The run's start names the dispatch and settled it in its own commit: nothing to add.
    if (outcome === 'settled') return true;
    if (outcome === 'skipped') return this.skip(d, `workflow ${d.listenerId} does not listen`);
    await this.deps.record({ dispatchId: d.dispatchId, listenerId: d.listenerId, emitId: d.emitId, outcome: 'started' });
    return true;
  }

  private async skip(d: ListenerDispatch, reason: string): Promise<boolean> {
    await this.deps.record({ dispatchId: d.dispatchId, listenerId: d.listenerId, emitId: d.emitId, outcome: 'skipped', reason });
    return true;
  }
}
