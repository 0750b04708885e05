/**
 * One timer for the next moment something may have to be evicted, instead of an interval: armed
 * when there is something to look at, re-armed by each look for the next deadline it reports,
 * and not armed at all when there is nothing (an idle worker with no instances is never woken).
 * `look` does the eviction and returns the next deadline (`performance.now()` ms), or undefined.
 */
export class EvictionTimer {
  private timer: NodeJS.Timeout | undefined;
  private at = Infinity;

  constructor(private readonly look: () => number | undefined, private readonly now: () => number = () => performance.now()) {}

  /** Makes a look happen at `at` or earlier. */
  lookBy(at: number): void {
    if (at >= this.at) return;
    if (this.timer) clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.at = Infinity;
      const next = this.look();
      if (next !== undefined) this.lookBy(next);
    }, Math.max(0, at - this.now()));
    this.timer.unref();
  }

  /** True while a look is scheduled. */
  get armed(): boolean {
    return this.timer !== undefined;
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.at = -Infinity;
  }
}
