import { crashLoopError } from './sandbox-error.factory';
import type { SandboxError } from './sandbox.types';

/** Instances remembered; past this the oldest strike records are forgotten. */
const MAX_TRACKED = 10_000;

/**
 * Counts, per instance, the worker deaths pinned on it in a row. From `threshold` on, the instance's
 * calls are refused for `cooldownMs` (they never reach the worker others share); after the
 * cool-down one call is let through, and another death refuses again at once. A call that ends
 * without killing its worker clears the count.
 */
export class CrashLoopBreaker {
  private readonly strikes = new Map<string, { crashes: number; refusedUntil: number }>();

  constructor(
    private readonly threshold: number,
    private readonly cooldownMs: number,
  ) {}

  /** Why a call of `instanceId` must not run now, or null if it may. */
  refusal(instanceId: string, now = Date.now()): SandboxError | null {
    const record = this.strikes.get(instanceId);
    if (!record || record.refusedUntil <= now) return null;
    return crashLoopError(record.crashes, record.refusedUntil);
  }

  /** `instanceId`'s isolate took its worker down. */
  crashed(instanceId: string, now = Date.now()): void {
    const record = this.strikes.get(instanceId) ?? { crashes: 0, refusedUntil: 0 };
    record.crashes++;
    if (record.crashes >= this.threshold) record.refusedUntil = now + this.cooldownMs;
    this.strikes.delete(instanceId);
    this.strikes.set(instanceId, record);
    for (const oldest of this.strikes.keys()) {
      if (this.strikes.size <= MAX_TRACKED) break;
      this.strikes.delete(oldest);
    }
  }

  /** A call of `instanceId` ended without taking its worker down. */
  survived(instanceId: string): void {
    this.strikes.delete(instanceId);
  }
}
