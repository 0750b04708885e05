import type { ListenerDispatched } from '@app/domain';
import type { ListenerDispatch } from '@app/projections';
import type { WorkflowListenerPort } from './listener-ports';

/** Listeners and accounts a read of pending dispatches passes over (they have no room now). */
export interface PendingSkip { listeners: readonly string[]; accounts: readonly string[] }

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
   * Pending dispatches, oldest first, at most `limit`, passing over those of `skip`'s listeners
   * and accounts, once the read models include every append so far (so dispatches that just
   * finished are no longer among them).
   */
  pending(limit: number, skip?: PendingSkip): Promise<ListenerDispatch[]>;
  /** The same for one listener's dispatches. */
  pendingOf(listenerId: string, limit: number): Promise<ListenerDispatch[]>;
}

/**
 * Dispatches in flight at once. More wait in the read model (durable) and are read back, oldest
 * first, as these finish, so a flood of emits never builds an unbounded queue in memory.
 */
export const MAX_DISPATCHES_IN_FLIGHT = 256;

/**
 * Dispatches of one listener in flight or waiting to be tried again. A source that runs slowly (its
 * dispatches wait in its actor's mailbox, one run at a time) or one whose dispatches keep failing
 * holds at most this many; its other emits wait in the read model and the other listeners' are
 * handed over meanwhile.
 */
export const MAX_DISPATCHES_PER_LISTENER = 32;

/** The same for all the listeners of one account: another account always finds room. */
export const MAX_DISPATCHES_PER_ACCOUNT = MAX_DISPATCHES_IN_FLIGHT / 2;

/** First delay before a dispatch that could not be handed over is tried again; doubles up to the max. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 30_000;

/** What handing one dispatch over came to. */
type Handed = 'done' | 'again' | 'full';

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
 * workflow port yet) is tried again later while its row is pending.
 *
 * Room: at most {@link MAX_DISPATCHES_IN_FLIGHT} in flight, at most
 * {@link MAX_DISPATCHES_PER_LISTENER} of one listener and {@link MAX_DISPATCHES_PER_ACCOUNT} of
 * one account in flight or waiting to be tried again, and nothing for a workflow whose lane is
 * full (`full`, until {@link listenerHasRoom}). A row without room stays in the read model and its
 * listener is "left behind": its later rows wait there too (a listener gets its emits in log
 * order), and it is read back, oldest first, once it has room again. Rows left for want of the
 * global room, or of an account's, are read back by one read over every listener that has room.
 */
export class ListenerDispatcher {
  private readonly inFlight = new Set<string>();
  private readonly retries = new Map<string, NodeJS.Timeout>();
  private readonly work = new Set<Promise<void>>();
  /** Per listener: dispatches in flight or waiting for a retry, and its account. */
  private readonly held = new Map<string, { accountId: string; n: number }>();
  /** Per account: the same. */
  private readonly heldByAccount = new Map<string, number>();
  /** Workflows that answered `full`, with their account: nothing is handed to them until they have room. */
  private readonly parked = new Map<string, string>();
  /** Listeners (with their account) whose rows may be waiting in the read model with nobody on them. */
  private readonly leftBehind = new Map<string, string>();
  /** Accounts whose listeners' rows may be waiting there, listeners unknown (passed over by a read). */
  private readonly accountsLeft = new Set<string>();
  private stopped = false;
  private started = false;
  /** Rows of any listener may have been left in the read model for want of room: one read of them all. */
  private backlogged = false;
  private refilling = false;
  /** Listeners whose rows were left (by the fast path or a failure) while a refill was reading. */
  private readonly leftDuringRefill = new Map<string, string>();
  private leftAllDuringRefill = false;

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
      if (this.refilling) this.leftAllDuringRefill = true;
      return;
    }
    if (this.leftBehind.has(d.listenerId) || this.accountsLeft.has(d.accountId) || !this.hasRoom(d.listenerId, d.accountId)) {
      this.leave(d.listenerId, d.accountId);
      // Read back at once if its room is already free (a refill that failed left it so).
      this.refillIfRoom();
      return;
    }
    this.begin(d, 0);
  }

  /**
   * The workflow `listenerId`, which answered `full`, has room again (its lane drained): its
   * pending emits are read back in log order.
   */
  listenerHasRoom(listenerId: string): void {
    if (!this.parked.delete(listenerId)) return;
    this.refillIfRoom();
  }

  /** Dispatches of a listener in flight or waiting for a retry now. */
  heldBy(listenerId: string): number {
    return this.held.get(listenerId)?.n ?? 0;
  }

  /** Whether `listenerId` is parked (its workflow answered `full` and has not drained since). */
  isParked(listenerId: string): boolean {
    return this.parked.has(listenerId);
  }

  private hasRoom(listenerId: string, accountId: string): boolean {
    return !this.parked.has(listenerId) && (this.held.get(listenerId)?.n ?? 0) < MAX_DISPATCHES_PER_LISTENER
      && (this.heldByAccount.get(accountId) ?? 0) < MAX_DISPATCHES_PER_ACCOUNT;
  }

  /** Room enough to be worth a read: half of the listener's (and of the account's) is free. */
  private roomToRead(listenerId: string, accountId: string): boolean {
    return this.listenerHalfFree(listenerId) && this.accountHalfFree(accountId);
  }

  private listenerHalfFree(listenerId: string): boolean {
    return !this.parked.has(listenerId) && (this.held.get(listenerId)?.n ?? 0) <= MAX_DISPATCHES_PER_LISTENER / 2;
  }

  private accountHalfFree(accountId: string): boolean {
    return (this.heldByAccount.get(accountId) ?? 0) <= MAX_DISPATCHES_PER_ACCOUNT / 2;
  }

  private leave(listenerId: string, accountId: string): void {
    this.leftBehind.set(listenerId, accountId);
    if (this.refilling) this.leftDuringRefill.set(listenerId, accountId);
  }

  /** Reads rows back when some were left for want of room that is free again. */
  private refillIfRoom(): void {
    if (this.stopped || this.refilling) return;
    if (this.backlogged) {
      if (this.inFlight.size <= MAX_DISPATCHES_IN_FLIGHT / 2) this.refill();
      return;
    }
    if (this.inFlight.size >= MAX_DISPATCHES_IN_FLIGHT) return;
    for (const accountId of this.accountsLeft) {
      if (this.accountHalfFree(accountId)) {
        // Which of its listeners have rows is not known: one read of them all.
        this.backlogged = true;
        this.refill();
        return;
      }
    }
    for (const [listenerId, accountId] of this.leftBehind) {
      if (this.roomToRead(listenerId, accountId)) {
        this.refill();
        return;
      }
    }
  }

  /** Reads pending rows back in log order while there is room; the backlog is over once they all fit. */
  private refill(): void {
    if (this.stopped || this.refilling) return;
    if (!this.backlogged && this.leftBehind.size === 0) return;
    this.refilling = true;
    this.leftDuringRefill.clear();
    this.leftAllDuringRefill = false;
    const job = (this.backlogged ? this.refillAll() : this.refillLeft()).then(
      () => {
        this.refilling = false;
        // The next read, if any, in a later turn: reads that follow each other never keep the loop from I/O.
        setImmediate(() => this.refillIfRoom());
      },
      (err) => {
        this.refilling = false;
        console.error('reading pending listener dispatches failed', err);
      },
    );
    this.work.add(job);
    void job.finally(() => this.work.delete(job));
  }

  /** One read over every listener with room: after the global room ran out, or an account's. */
  private async refillAll(): Promise<void> {
    const room = MAX_DISPATCHES_IN_FLIGHT - this.inFlight.size;
    if (room <= 0) return;
    // Passed over: listeners and accounts without half of their room free (`roomToRead`). A read
    // then never returns rows only to leave them, and a listener at its share that frees one slot
    // does not make every finish a read of its rows.
    const skipListeners = new Map<string, string>(this.parked);
    for (const [listenerId, h] of this.held) if (!this.listenerHalfFree(listenerId)) skipListeners.set(listenerId, h.accountId);
    const skipAccounts = [...this.heldByAccount.keys()].filter((a) => !this.accountHalfFree(a));
    // Rows in flight or waiting for a retry are still pending: read past them.
    const limit = room + this.inFlight.size + this.retries.size;
    const rows = await this.deps.pending(limit, { listeners: [...skipListeners.keys()], accounts: skipAccounts });
    if (this.stopped) return;
    const left = this.take(rows);
    if (rows.length >= limit || left.global || this.leftAllDuringRefill) return; // more may wait: read again when there is room
    // Every row of the listeners read was seen: those left behind now are the ones passed over
    // (they may have rows) and those that ran out of room in this read.
    this.backlogged = false;
    this.leftBehind.clear();
    this.accountsLeft.clear();
    for (const [listenerId, accountId] of skipListeners) this.leftBehind.set(listenerId, accountId);
    for (const accountId of skipAccounts) this.accountsLeft.add(accountId);
    for (const [listenerId, accountId] of left.listeners) this.leftBehind.set(listenerId, accountId);
    for (const [listenerId, accountId] of this.leftDuringRefill) this.leftBehind.set(listenerId, accountId);
  }

  /** Reads back the rows of each listener left behind that has room again, oldest first. */
  private async refillLeft(): Promise<void> {
    for (const [listenerId, accountId] of [...this.leftBehind]) {
      if (this.stopped || this.backlogged) return;
      if (!this.roomToRead(listenerId, accountId) || this.accountsLeft.has(accountId)) continue;
      // Read past its rows in flight or waiting for a retry, which are still pending.
      const limit = MAX_DISPATCHES_PER_LISTENER + (this.held.get(listenerId)?.n ?? 0);
      this.leftDuringRefill.delete(listenerId);
      const rows = await this.deps.pendingOf(listenerId, limit);
      if (this.stopped) return;
      const left = this.take(rows);
      if (left.global) {
        this.backlogged = true;
        return;
      }
      if (rows.length < limit && !left.listeners.has(listenerId) && !this.leftDuringRefill.has(listenerId)) this.leftBehind.delete(listenerId);
    }
  }

  /** Begins the rows read back that have room; says which listeners ran out of it (and whether the global room did). */
  private take(rows: ListenerDispatch[]): { listeners: Map<string, string>; global: boolean } {
    const left = { listeners: new Map<string, string>(), global: false };
    for (const d of rows) {
      if (this.inFlight.has(d.dispatchId) || this.retries.has(d.dispatchId)) continue;
      if (this.inFlight.size >= MAX_DISPATCHES_IN_FLIGHT) {
        left.global = true;
        break;
      }
      // A listener's rows go in log order: one passed over keeps its later ones back too.
      if (left.listeners.has(d.listenerId) || !this.hasRoom(d.listenerId, d.accountId)) {
        left.listeners.set(d.listenerId, d.accountId);
        continue;
      }
      this.begin(d, 0);
    }
    return left;
  }

  private hold(d: ListenerDispatch, by: 1 | -1): void {
    const h = this.held.get(d.listenerId);
    if (h) {
      h.n += by;
      if (h.n <= 0) this.held.delete(d.listenerId);
    } else if (by > 0) {
      this.held.set(d.listenerId, { accountId: d.accountId, n: 1 });
    }
    const a = (this.heldByAccount.get(d.accountId) ?? 0) + by;
    if (a > 0) this.heldByAccount.set(d.accountId, a);
    else this.heldByAccount.delete(d.accountId);
  }

  private begin(d: ListenerDispatch, attempt: number): void {
    if (this.stopped || this.inFlight.has(d.dispatchId)) return;
    this.inFlight.add(d.dispatchId);
    if (attempt === 0) this.hold(d, 1);
    const job = this.dispatch(d).then(
      (handed) => this.finish(d, handed, attempt),
      (err) => {
        console.error(`dispatch of ${d.emitId} to ${d.listenerId} failed; retrying`, err);
        this.finish(d, 'again', attempt);
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

  private finish(d: ListenerDispatch, handed: Handed, attempt: number): void {
    this.inFlight.delete(d.dispatchId);
    if (handed === 'again' && !this.stopped) {
      // Still held by its listener while it waits: a listener whose dispatches keep failing holds
      // at most its share, and the others go on.
      const delay = Math.min(RETRY_FIRST_MS * 2 ** attempt, RETRY_MAX_MS);
      const timer = setTimeout(() => {
        this.retries.delete(d.dispatchId);
        if (this.deps.isPending(d.dispatchId)) this.begin(d, attempt + 1);
        else this.released(d);
      }, delay);
      timer.unref();
      this.retries.set(d.dispatchId, timer);
    } else {
      if (handed === 'full') {
        // The workflow holds as many runs as it may: this row and its listener's later ones wait
        // in the read model until it has drained (`listenerHasRoom`).
        this.parked.set(d.listenerId, d.accountId);
        this.leave(d.listenerId, d.accountId);
      }
      this.released(d);
      return;
    }
    // After the retry is set, so a refill does not pick the row that just failed.
    this.refillIfRoom();
  }

  /** A dispatch its listener no longer holds. */
  private released(d: ListenerDispatch): void {
    this.hold(d, -1);
    this.refillIfRoom();
  }

  /** Hands one dispatch to its listener. */
  private dispatch(d: ListenerDispatch): Promise<Handed> {
    // Synchronous up to the actor's mailbox: dispatches to one source keep their emit order.
    if (d.listenerId.startsWith('dc_')) return this.toSource(d);
    if (d.listenerId.startsWith('p_')) return this.toWorkflow(d);
    return this.skip(d, `listener ${d.listenerId} cannot hear emits`);
  }

  private async toSource(d: ListenerDispatch): Promise<Handed> {
    const src = this.deps.source(d.listenerId);
    if (!src || src.status === 'deleted' || src.status === 'failed') return this.skip(d, `source ${d.listenerId} is gone`);
    if (src.status !== 'deployed') return 'again';
    if (src.active !== 1) return this.skip(d, `source ${d.listenerId} is inactive`);
    const ran = await this.deps.runSource(d.listenerId, JSON.parse(d.body) as unknown, d.dispatchId, d.hops + 1);
    // Refused: already run (the row goes once its record is projected) or mid-transition. Either
    // way the row is looked at again later while it is still pending.
    return ran ? 'done' : 'again';
  }

  private async toWorkflow(d: ListenerDispatch): Promise<Handed> {
    const port = this.deps.workflows();
    if (!port) return 'again';
    const outcome = await port.startFromEmit(d.listenerId, d.accountId, JSON.parse(d.body) as unknown, {
      emitterId: d.emitterId, emitId: d.emitId, eventName: d.eventName, ts: d.ts, hops: d.hops + 1, dispatchId: d.dispatchId,
    });
    // The run's start names the dispatch and settled it in its own commit: nothing to add.
    if (outcome === 'settled') return 'done';
    if (outcome === 'full') return 'full';
    if (outcome === 'skipped') return this.skip(d, `workflow ${d.listenerId} does not listen`);
    await this.deps.record({ dispatchId: d.dispatchId, listenerId: d.listenerId, emitId: d.emitId, outcome: 'started' });
    return 'done';
  }

  private async skip(d: ListenerDispatch, reason: string): Promise<Handed> {
    await this.deps.record({ dispatchId: d.dispatchId, listenerId: d.listenerId, emitId: d.emitId, outcome: 'skipped', reason });
    return 'done';
  }
}
