/** Arrivals the pace is measured over (the last few: a change of rate shows within as many). */
export const ARRIVAL_PACE_WINDOW = 8;
/**
 * Arrivals expected within a linger, at least, for the pace to count as busy (`busy`): 1.5, so
 * with the 2 ms request linger from about 750 arrivals/s. At one arrival per linger, the one
 * expected lands at the deadline, where it shares nothing with what waited.
 */
export const LINGER_BUSY_ARRIVALS = 1.5;

/**
 * The pace of the appends whose callers wait for an fsync (arrivals: a request to record, say),
 * from the times of the last {@link ARRIVAL_PACE_WINDOW}: the mean gap between them, and whether
 * it is busy enough for a lingering append to find company. Times in ms on any monotonic clock
 * (`performance.now()` in the store).
 */
export class ArrivalPace {
  private readonly times = new Float64Array(ARRIVAL_PACE_WINDOW);
  private count = 0;
  private next = 0;

  /** An arrival at `now`. */
  note(now: number): void {
    this.times[this.next] = now;
    this.next = (this.next + 1) % ARRIVAL_PACE_WINDOW;
    if (this.count < ARRIVAL_PACE_WINDOW) this.count++;
  }

  /** Mean gap between the arrivals in the window (ms), Infinity while fewer than two are known. */
  get gap(): number {
    if (this.count < 2) return Infinity;
    const first = this.times[this.count < ARRIVAL_PACE_WINDOW ? 0 : this.next];
    return (this.last - first) / (this.count - 1);
  }

  /**
   * True when at this pace at least {@link LINGER_BUSY_ARRIVALS} arrivals are expected within
   * `lingerMs`, and the last one came within the last `lingerMs` before `now` (a pace that broke
   * off holds up at most what comes within one linger of its end). Never with no pace known.
   */
  busy(now: number, lingerMs: number): boolean {
    return this.gap * LINGER_BUSY_ARRIVALS <= lingerMs && now - this.last <= lingerMs;
  }

  private get last(): number {
    return this.times[(this.next + ARRIVAL_PACE_WINDOW - 1) % ARRIVAL_PACE_WINDOW];
  }
}
