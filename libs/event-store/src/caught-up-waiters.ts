interface CaughtUpWaiter {
  target: bigint;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * The promises behind `Subscription.caughtUp()`: each resolves once the subscription has handed
 * over the log up to its target, or when the subscription stops, and rejects when it failed.
 */
export class CaughtUpWaiters {
  private waiters: CaughtUpWaiter[] = [];
  private failure: { error: unknown } | undefined;
  private finished = false;

  /** Waits until `position()` reaches `target` (checked now and after every `progress`). */
  wait(target: bigint, position: bigint): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter = { target, resolve, reject };
      if (!this.settle(waiter, position)) this.waiters.push(waiter);
    });
  }

  /** The subscription handed over everything up to `position`. */
  progress(position: bigint): void {
    if (this.waiters.length > 0) this.waiters = this.waiters.filter((w) => !this.settle(w, position));
  }

  /** Records why the subscription stopped; `finish` then rejects the waiters with it. */
  fail(error: unknown): void {
    this.failure ??= { error };
  }

  /** The subscription stopped: every waiter settles now, and later ones at once. */
  finish(position: bigint): void {
    this.finished = true;
    for (const waiter of this.waiters) this.settle(waiter, position);
    this.waiters = [];
  }

  private settle(waiter: CaughtUpWaiter, position: bigint): boolean {
    if (this.failure) {
      waiter.reject(this.failure.error);
      return true;
    }
    if (this.finished || position >= waiter.target) {
      waiter.resolve();
      return true;
    }
    return false;
  }
}
