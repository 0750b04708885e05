import type { LimitKind } from './invocation.run';
import type { SandboxError, SandboxLimits, SandboxResult } from './sandbox.types';

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

/** The error of the instance whose isolate took its worker down (calls of everyone else are re-sent). */
export function culpritCrashError(detail: string): SandboxError {
  return {
    kind: 'crash',
    name: 'SandboxCrashError',
    message: `this component exhausted the memory of its sandbox worker and took the worker down (${detail}); the other runs on that worker were re-run`,
  };
}

/** The error of a run refused because its instance took its worker down `crashes` times in a row. */
export function crashLoopError(crashes: number, until: number): SandboxError {
  return {
    kind: 'crash',
    name: 'SandboxCrashLoopError',
    message: `not run: this component took its sandbox worker down ${crashes} times in a row (out of memory); its runs are refused until ${new Date(until).toISOString()}`,
  };
}

/** The result of a call that never ran to the end in an isolate: no emits, the error as the only log line. */
export function failedResult(error: SandboxError, durationMs: number): SandboxResult {
  return {
    ok: false,
    error,
    emits: [],
    logs: [{ level: 'error', message: `${error.name}: ${error.message}`, ts: Date.now() }],
    dbWrites: [],
    durationMs,
    cpuMs: 0,
  };
}
