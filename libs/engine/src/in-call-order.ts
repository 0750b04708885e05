/**
 * Applies a function to values in the order they were handed over, some of which must first be
 * waited for. A value that is ready while nothing is waiting is applied at once, in the caller's
 * turn (the common case costs nothing); a value that is a promise, and every value handed over
 * while one is pending, waits its turn. A rejected value rejects its own caller only: the values
 * after it go on. Used where an answer now and then needs a read first but the calls must keep
 * their order (the starts of runs from emits: see `WorkflowUseCases.startFromEmit`).
 */
export class InCallOrder {
  private last: Promise<void> | undefined;

  apply<T, R>(value: T | Promise<T>, fn: (value: T) => R): R | Promise<R> {
    if (!(value instanceof Promise) && this.last === undefined) return fn(value);
    const out = (this.last ?? Promise.resolve()).then(async () => fn(await value));
    const settled = out.then(() => undefined, () => undefined);
    this.last = settled;
    void settled.then(() => {
      if (this.last === settled) this.last = undefined;
    });
    return out;
  }
}
