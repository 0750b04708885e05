/**
 * Coalesces IPC messages produced in the same event-loop turn into one write. Each IPC send is a
 * JSON encoding plus a syscall on both ends; pipelined calls arrive and finish in bursts, so one
 * array per turn costs far less than one message per call, and adds no latency to a lone call
 * pushed without a hold.
 *
 * A message pushed with a hold (`push(message, holdMs)`) into an empty queue waits up to that long
 * for company: the write goes at the end of the turn in which anything else is pushed, or when the
 * hold is up. Callers hold a message only when its caller does not wait for it and more are due
 * within the hold (see `EngineRuntime.invoke`): then one write, one wake-up of the worker and one
 * entry into an isolate serve two runs or more where they served one.
 */
export class MessageBatcher<T> {
  private queue: T[] = [];
  /** A write is scheduled: at the end of this turn (`atTurnEnd`) or when a hold is up (`holdTimer`). */
  private atTurnEnd = false;
  private holdTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly deliver: (batch: T[]) => void,
    private readonly maxBatch = 256,
  ) {}

  /** Queues `message`; written at the end of this turn, or after up to `holdMs` when it is the only one queued. */
  push(message: T, holdMs = 0): void {
    this.queue.push(message);
    if (this.queue.length >= this.maxBatch) this.flush();
    else if (this.queue.length === 1 && holdMs > 0) this.holdTimer = setTimeout(() => this.flush(), holdMs);
    else if (!this.atTurnEnd) {
      this.atTurnEnd = true;
      setImmediate(() => this.flush());
    }
  }

  /** Delivers what is queued now (and drops nothing: a failing deliver is the caller's to handle). */
  flush(): void {
    this.atTurnEnd = false;
    if (this.holdTimer !== null) {
      clearTimeout(this.holdTimer);
      this.holdTimer = null;
    }
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.deliver(batch);
  }

  /** Takes back what was not delivered yet (the process it was meant for is gone). */
  drain(): T[] {
    if (this.holdTimer !== null) {
      clearTimeout(this.holdTimer);
      this.holdTimer = null;
    }
    const batch = this.queue;
    this.queue = [];
    return batch;
  }
}
