import { DEFAULT_RUN_OUTPUT_LIMITS, RunOutputLimits } from './guest/run-output-limits.guest';
import type { SandboxLimits } from './sandbox.types';

/** Limits applied when neither the supervisor nor the invocation says otherwise. */
export const DEFAULT_SANDBOX_LIMITS: Readonly<SandboxLimits> = Object.freeze({ memoryMb: 128, timeoutMs: 30_000, cpuMs: 30_000 });

/** isolated-vm refuses memory limits under 8 MB. */
const MIN_MEMORY_MB = 8;

/** Merges limit layers (later wins) and clamps each value to what the sandbox can enforce. */
export function resolveLimits(...layers: (Partial<SandboxLimits> | undefined)[]): SandboxLimits {
  const merged: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS };
  for (const layer of layers) {
    if (!layer) continue;
    for (const key of ['memoryMb', 'timeoutMs', 'cpuMs'] as const) {
      const value = layer[key];
      if (typeof value === 'number' && Number.isFinite(value) && value > 0) merged[key] = value;
    }
  }
  merged.memoryMb = Math.max(MIN_MEMORY_MB, Math.floor(merged.memoryMb));
  merged.timeoutMs = Math.max(1, Math.floor(merged.timeoutMs));
  merged.cpuMs = Math.max(1, Math.floor(merged.cpuMs));
  return merged;
}

/** The output limits with every unset or unusable value at its default; values are whole numbers of at least 1. */
export function resolveOutputLimits(layer: Partial<RunOutputLimits> = {}): RunOutputLimits {
  const merged: RunOutputLimits = { ...DEFAULT_RUN_OUTPUT_LIMITS };
  for (const key of Object.keys(merged) as (keyof RunOutputLimits)[]) {
    const value = layer[key];
    if (typeof value === 'number' && Number.isFinite(value) && value >= 1) merged[key] = Math.floor(value);
  }
  return merged;
}
