import type { LimitKind } from './invocation.run';
import type { SandboxError, SandboxLimits } from './sandbox.types';

/** The error of a run ended for breaking a limit; the message names the limit. */
export function limitError(kind: LimitKind, limits: SandboxLimits): SandboxError {
  switch (kind) {
    case 'timeout':
      return {
        kind,
        name: 'TimeoutError',
        message: `the run did not finish within ${limits.timeoutMs} ms (wall-clock limit; awaits and timers count)`,
      };
    case 'cpu':
      return { kind, name: 'CpuLimitError', message: `the run used more than ${limits.cpuMs} ms of CPU time` };
    case 'memory':
      return { kind, name: 'MemoryLimitError', message: `the run exceeded the ${limits.memoryMb} MB memory limit` };
  }
}

/** The error of an invocation lost because its worker process died (or the sandbox failed). */
export function crashError(detail: string): SandboxError {
  return { kind: 'crash', name: 'SandboxCrashError', message: `the sandbox worker failed while running this invocation: ${detail}` };
}

/** The error of code that cannot be loaded or run at all. */
export function invalidError(name: string, message: string, stack?: string): SandboxError {
  return stack ? { kind: 'invalid', name, message, stack } : { kind: 'invalid', name, message };
}
