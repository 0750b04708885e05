import type { EgressPolicy } from '@app/delivery';
import type { RunOutputLimits } from './guest/run-output-limits.guest';
import type { ComponentDescription, SandboxError, SandboxInvocation, SandboxLimits, SandboxResult } from './sandbox.types';

/** What a worker writes to stderr before it kills itself after a catastrophic isolate error. */
export const FATAL_MARKER = 'sluice-sandbox-fatal: ';

/** What `describe` answers. */
export type DescribeOutcome = ComponentDescription | { error: SandboxError };

/** How a worker is configured (passed as its first argument, JSON). */
export interface WorkerConfig {
  egress: EgressPolicy;
  limits: SandboxLimits;
  /** Caps on what one run may emit and write. */
  output: RunOutputLimits;
  /** Warm isolates kept before the least recently used are disposed. */
  maxIsolates: number;
  /** Single runs on warm isolates entered synchronously (absent: true). */
  syncEntries?: boolean;
  /** See `IsolatePoolOptions.syncCooldownMs` (absent: its default). */
  syncCooldownMs?: number;
}

/** Supervisor -> worker (sent in arrays, one per event-loop turn). `inv.bundle` is '' when the supervisor believes the worker has it. */
export type SupervisorMessage =
  | { t: 'invoke'; id: number; inv: SandboxInvocation }
  | { t: 'describe'; id: number; codeId: string; bundle: string }
  | { t: 'ping'; id: number };

/** Worker -> supervisor (sent in arrays, one per event-loop turn). */
export type WorkerMessage =
  | { t: 'ready' }
  | { t: 'result'; id: number; result: SandboxResult }
  | { t: 'described'; id: number; outcome: DescribeOutcome }
  | { t: 'needBundle'; id: number }
  | { t: 'pong'; id: number };

/**
 * The instance id named when a describe's throwaway isolate takes the worker down. Here, not in
 * the isolate pool, so the server can name it without loading isolated-vm.
 */
export function describeInstanceId(codeId: string): string {
  return `describe:${codeId}`;
}
