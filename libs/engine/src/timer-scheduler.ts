import { missedFireOnStart, nextTimerFire, timerEvent, validateTimer } from '@app/domain';
import type { TimerConfig, TimerEvent } from '@app/domain';

/** The fields of a source row the scheduler reads (a subset of the read model's `SourceRow`). */
export interface TimerSourceRow {
  id: string;
  active: number | boolean;
  status: string;
}

/** What the scheduler needs from the engine. */
export interface TimerSchedulerDeps {
  /** Sources that may be live; only `status === 'deployed'` with a truthy `active` are fired. */
  liveSources(): TimerSourceRow[];
  /** The source's timer prop and its raw value (configured, else default); undefined if it has none. */
  timerOf(sourceId: string): { propName: string; timer: unknown } | undefined;
  /** When the source's timer last fired (epoch ms, from the log), or undefined if never. */
  lastFire(sourceId: string): number | undefined;
  /** Runs the source for one timer event; settles when the run is recorded. */
  fire(sourceId: string, event: TimerEvent): Promise<unknown>;
  now?: () => number;
  log?: (msg: string) => void;
}

interface ScheduledTimer {
  sourceId: string;
  propName: string;
  timer: TimerConfig;
  /** Identity of the timer value: a refresh with the same value keeps the phase. */
  key: string;
  due: number;
  /** The scheduled time of the last fire (or skipped tick), the phase for the next one. */
  lastFire?: number;
  /** Matches the heap entry that is current for this source; older heap entries are stale. */
  gen: number;
}

interface HeapItem {
  due: number;
  sourceId: string;
  gen: number;
}

/** setTimeout cannot wait longer than 2^31-1 ms; longer waits wake up early and re-arm. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/**
 * Fires the interval and cron timers of deployed, active sources (spec 2.5). One setTimeout for
 * the earliest due source at a time, re-armed after each wake and each change, so the cost does
 * not grow with the number of idle sources. A source never has two timer runs in flight: a tick
 * that comes due while the previous one still runs is skipped, not queued. Nothing is stored
 * here: the last fire of each source comes from the log (`deps.lastFire`), so after a restart a
 * source that missed ticks while the server was down fires once at start, then resumes its
 * schedule. Call `refresh(sourceId)` after every deploy, update, activation change or delete.
 */
export class TimerScheduler {
  private readonly scheduled = new Map<string, ScheduledTimer>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly heap: HeapItem[] = [];
  private wake?: NodeJS.Timeout;
  private running = false;
  private gen = 0;
  private readonly now: () => number;
  private readonly log: (msg: string) => void;

  constructor(private readonly deps: TimerSchedulerDeps) {
    this.now = deps.now ?? Date.now;
    this.log = deps.log ?? ((msg) => console.warn(msg));
  }

  /** Schedules every live timer; those that missed a fire while down are due at once (one fire each). */
  start(): void {
    if (this.running) return;
    this.running = true;
    const now = this.now();
    for (const row of this.safeLiveSources()) {
      if (!isLive(row)) continue;
      const found = this.timerOf(row.id);
      if (!found) continue;
      const last = this.lastFireOf(row.id);
      const due = missedFireOnStart(found.timer, last, now) ? now : nextTimerFire(found.timer, last, now);
      this.put(row.id, found, due, last);
    }
    this.arm();
  }

  /**
   * Re-reads one source (or all, without an id) after a change: a new or changed timer is
   * scheduled from its last fire, a timer whose value did not change keeps its next due time, and
   * a source that is no longer deployed and active, or has no timer, is dropped. A run already
   * in flight is not cancelled.
   */
  refresh(sourceId?: string): void {
    if (!this.running) return;
    const rows = this.safeLiveSources();
    if (sourceId !== undefined) {
      this.sync(sourceId, rows.find((r) => r.id === sourceId));
    } else {
      const seen = new Set<string>();
      for (const row of rows) {
        seen.add(row.id);
        this.sync(row.id, row);
      }
      for (const id of [...this.scheduled.keys()]) if (!seen.has(id)) this.scheduled.delete(id);
    }
    this.arm();
  }

  /** Stops firing; resolves when the timer runs already in flight have settled. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.wake) clearTimeout(this.wake);
    this.wake = undefined;
    this.scheduled.clear();
    this.heap.length = 0;
    await Promise.all([...this.inFlight.values()]);
  }

  /** When the source's timer is next due (epoch ms), or undefined if it is not scheduled. */
  nextFireAt(sourceId: string): number | undefined {
    return this.scheduled.get(sourceId)?.due;
  }

  private sync(sourceId: string, row: TimerSourceRow | undefined): void {
    const found = row && isLive(row) ? this.timerOf(sourceId) : undefined;
    const current = this.scheduled.get(sourceId);
    if (!found) {
      this.scheduled.delete(sourceId);
      return;
    }
    if (current && current.key === timerKey(found.timer) && current.propName === found.propName) return;
    const logged = this.lastFireOf(sourceId);
    const last = current?.lastFire === undefined ? logged : logged === undefined ? current.lastFire : Math.max(current.lastFire, logged);
    this.put(sourceId, found, nextTimerFire(found.timer, last, this.now()), last);
  }

  private put(sourceId: string, found: { propName: string; timer: TimerConfig }, due: number, lastFire: number | undefined): void {
    const gen = ++this.gen;
    this.scheduled.set(sourceId, { sourceId, propName: found.propName, timer: found.timer, key: timerKey(found.timer), due, lastFire, gen });
    this.push({ due, sourceId, gen });
  }

  private arm(): void {
    if (this.wake) clearTimeout(this.wake);
    this.wake = undefined;
    if (!this.running) return;
    const top = this.peek();
    if (!top) return;
    const delay = Math.min(Math.max(0, top.due - this.now()), MAX_DELAY_MS);
    this.wake = setTimeout(() => this.tick(), delay);
    // The scheduler alone must not keep the process alive (admin commands, tests).
    this.wake.unref?.();
  }

  private tick(): void {
    this.wake = undefined;
    if (!this.running) return;
    const now = this.now();
    for (let top = this.peek(); top && top.due <= now; top = this.peek()) {
      this.pop();
      const entry = this.scheduled.get(top.sourceId)!;
      this.fireDue(entry);
      entry.lastFire = entry.due;
      try {
        entry.due = nextTimerFire(entry.timer, entry.lastFire, now);
      } catch (err) {
        // One timer that cannot be computed must not stop the wheel for every other source.
        this.scheduled.delete(entry.sourceId);
        this.log(`timer of ${entry.sourceId} dropped: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      entry.gen = ++this.gen;
      this.push({ due: entry.due, sourceId: entry.sourceId, gen: entry.gen });
    }
    this.arm();
  }

  private fireDue(entry: ScheduledTimer): void {
    const { sourceId } = entry;
    if (this.inFlight.has(sourceId)) {
      this.log(`timer of ${sourceId}: tick at ${new Date(entry.due).toISOString()} skipped, the previous timer run is still running`);
      return;
    }
    // The event carries the scheduled time; a late wake-up still reports the slot it fires for.
    const event = timerEvent(entry.timer, entry.due);
    const run = (async () => {
      try {
        await this.deps.fire(sourceId, event);
      } catch (err) {
        this.log(`timer run of ${sourceId} failed: ${err instanceof Error ? err.message : String(err)}`);
      } finally {
        this.inFlight.delete(sourceId);
      }
    })();
    this.inFlight.set(sourceId, run);
  }

  private timerOf(sourceId: string): { propName: string; timer: TimerConfig } | undefined {
    let raw: { propName: string; timer: unknown } | undefined;
    try {
      raw = this.deps.timerOf(sourceId);
    } catch (err) {
      this.log(`timer of ${sourceId} not scheduled: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
    if (!raw || raw.timer === undefined || raw.timer === null) return undefined;
    const checked = validateTimer(raw.timer, `configured_props.${raw.propName}`);
    if (!checked.timer) {
      this.log(`timer of ${sourceId} not scheduled: ${checked.errors.map((e) => `${e.field} ${e.message}`).join('; ')}`);
      return undefined;
    }
    return { propName: raw.propName, timer: checked.timer };
  }

  private lastFireOf(sourceId: string): number | undefined {
    try {
      return this.deps.lastFire(sourceId);
    } catch (err) {
      this.log(`last timer fire of ${sourceId} unknown: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  }

  private safeLiveSources(): TimerSourceRow[] {
    try {
      return this.deps.liveSources();
    } catch (err) {
      this.log(`timer scheduler cannot list sources: ${err instanceof Error ? err.message : String(err)}`);
      return [];
    }
  }

  /** The earliest current heap item, dropping stale ones (rescheduled or removed sources). */
  private peek(): HeapItem | undefined {
    while (this.heap.length > 0) {
      const top = this.heap[0];
      if (this.scheduled.get(top.sourceId)?.gen === top.gen) return top;
      this.pop();
    }
    return undefined;
  }

  private push(item: HeapItem): void {
    const h = this.heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent].due <= item.due) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = item;
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const child = r < h.length && h[r].due < h[l].due ? r : l;
      if (h[child].due >= last.due) break;
      h[i] = h[child];
      i = child;
    }
    h[i] = last;
  }
}

function isLive(row: TimerSourceRow): boolean {
  return row.status === 'deployed' && Boolean(row.active);
}

function timerKey(timer: TimerConfig): string {
  return JSON.stringify([timer.intervalSeconds ?? null, timer.cron ?? null, timer.timezone ?? null]);
}
