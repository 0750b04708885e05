import { performance } from 'node:perf_hooks';
import { ArrivalPace } from '@app/event-store';

/**
 * How long a run's invocation may wait for company on its way to the sandbox worker
 * (`SandboxSupervisor.invoke`'s `holdMs`). Only runs that serve an HTTP request answered once it is
 * durable are held: nobody waits for them, and their request lingers for as long anyway
 * (`SLUICE_REQUEST_LINGER_MS`) to share its commit with the next ones.
 *
 * A hold pays only while the next requests come within it: then the worker gets one message and
 * the instance's isolate one entry for two runs or more, where each run cost a write, a wake-up
 * of the worker's main thread and of isolated-vm's thread, and a result message back. So the hold
 * is the request linger while the requests' pace brings company within it ({@link ArrivalPace}:
 * from about 750 requests/s with 2 ms), and 0 below that pace, where each run goes out at the end
 * of its turn as before.
 */
export class InvocationHold {
  private readonly pace = new ArrivalPace();

  /**
   * `lingerMs`: the request linger (0: never hold). `saturated`: whether the event loop is
   * saturated now (`SqliteEventStore.loopSaturated`); then nothing is held, as requests do not
   * linger then either: a saturated loop's turns queue many runs each, which share their writes
   * anyway. This rule alone did not keep saturation as it was (a build that held there too took
   * p50 from 7.5-8.0 to 9.1-9.4 ms, and with this rule still about 8.2 ms, since the loop is not
   * always measured saturated there); what did is the worker handle's: no hold while the worker
   * has a call in flight (`SandboxWorkerHandle.invoke`).
   */
  constructor(private readonly lingerMs: number, private readonly saturated: () => boolean = () => false) {}

  /** Notes one such run's invocation at `now`; returns the hold for its write (ms, 0: none). */
  next(now = performance.now()): number {
    if (!(this.lingerMs > 0)) return 0;
    this.pace.note(now);
    return this.pace.busy(now, this.lingerMs) && !this.saturated() ? this.lingerMs : 0;
  }
}
