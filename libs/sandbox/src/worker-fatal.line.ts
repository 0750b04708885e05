import { FATAL_MARKER } from './sandbox.protocol';

/** Why a worker died, as it said in its last words on stderr. */
export interface WorkerFatal {
  /** The instance whose isolate took the process down (undefined for an old or garbled line). */
  culprit?: string;
  message: string;
}

/** The stderr line a worker writes (synchronously) before it kills itself for `culprit`'s isolate. */
export function fatalLine(culprit: string, message: string): string {
  return `${FATAL_MARKER}${JSON.stringify({ culprit, message })}\n`;
}

/** The last fatal line in a worker's stderr tail, or null if it died without one. */
export function parseFatalLine(stderrTail: string): WorkerFatal | null {
  const at = stderrTail.lastIndexOf(FATAL_MARKER);
  if (at === -1) return null;
  const line = stderrTail.slice(at + FATAL_MARKER.length).split('\n')[0].trim();
  try {
    const parsed = JSON.parse(line) as { culprit?: unknown; message?: unknown };
    if (typeof parsed.culprit === 'string' && typeof parsed.message === 'string') return { culprit: parsed.culprit, message: parsed.message };
  } catch {
    // Not ours or cut short: keep the text, name no culprit.
  }
  return { message: line };
}
