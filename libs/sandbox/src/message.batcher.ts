/**
 * Coalesces IPC messages produced in the same event-loop turn into one write. Each IPC send is a
 * JSON encoding plus a syscall on both ends; pipelined calls arrive and finish in bursts, so one
 * array per turn costs far less than one message per call, and adds no latency to a lone call.
 */
export class MessageBatcher<T> {
  private queue: T[] = [];
  private scheduled = false;

  constructor(
    private readonly deliver: (batch: T[]) => void,
    private readonly maxBatch = 256,
  ) {}

  push(message: T): void {
    this.queue.push(message);
    if (this.queue.length >= this.maxBatch) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Delivers what is queued now (and drops nothing: a failing deliver is the caller's to handle). */
  flush(): void {
    this.scheduled = false;
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
