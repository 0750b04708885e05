/**
 * Characters of large text one write carries at most, unless one message alone carries more: a
 * write is one JSON text, and past 128 KB V8 allocates a string in its large-object space at about
 * 70 times the cost per byte (on both ends: the text written, the line read and parsed).
 */
export const MAX_BATCH_CHARS = 96 * 1024;

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
  /** Characters of large text the queued messages carry, as their pushers said (`push`'s `chars`). */
  private queuedChars = 0;
  /** A write is scheduled: at the end of this turn (`atTurnEnd`) or when a hold is up (`holdTimer`). */
  private atTurnEnd = false;
  private holdTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly deliver: (batch: T[]) => void,
    private readonly maxBatch = 256,
    private readonly maxChars = MAX_BATCH_CHARS,
  ) {}

  /**
   * Queues `message`; written at the end of this turn, or after up to `holdMs` when it is the only
   * one queued. `chars`: the length of the large text it carries (an HTTP request's event): what
   * is queued is written first when this one would take the batch past `maxChars`.
   */
  push(message: T, holdMs = 0, chars = 0): void {
    if (chars > 0) {
      if (this.queue.length > 0 && this.queuedChars + chars > this.maxChars) this.flush();
      this.queuedChars += chars;
    }
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
    this.queuedChars = 0;
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
    this.queuedChars = 0;
    if (this.holdTimer !== null) {
      clearTimeout(this.holdTimer);
      this.holdTimer = null;
    }
    const batch = this.queue;
    this.queue = [];
    return batch;
  }
}
