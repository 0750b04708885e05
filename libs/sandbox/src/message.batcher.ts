/**
 * Coalesces IPC messages produced in the same event-loop turn into one write. Each IPC send is a
 * JSON encoding plus a syscall on both ends; pipelined calls arrive and finish in bursts, so one
 * array per turn costs far less than one message per call.
 *
 * The first message of a turn is written at once, and only the ones after it in the same turn
 * wait for the turn's end (`setImmediate`): a lone call leaves before whatever else that turn
 * scheduled (a request's group commit, say), so the other process works on it meanwhile.
 */
export class MessageBatcher<T> {
  private queue: T[] = [];
  private scheduled = false;

  constructor(
    private readonly deliver: (batch: T[]) => void,
    private readonly maxBatch = 256,
  ) {}

  push(message: T): void {
    if (!this.scheduled) {
      // The turn's first message: sent now; the rest of the turn's are coalesced after it.
      this.scheduled = true;
      setImmediate(() => this.flush());
      this.deliver([message]);
      return;
    }
    this.queue.push(message);
    if (this.queue.length >= this.maxBatch) this.deliverQueued();
  }

  /** Delivers what is queued now (and drops nothing: a failing deliver is the caller's to handle). */
  flush(): void {
    this.scheduled = false;
    this.deliverQueued();
  }

  private deliverQueued(): void {
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.deliver(batch);
  }

  /** Takes back what was not delivered yet (the process it was meant for is gone). */
  drain(): T[] {
    const batch = this.queue;
    this.queue = [];
    return batch;
  }
}
