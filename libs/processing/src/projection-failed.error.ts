/**
 * A processor stopped on an error and has not applied a batch since: whoever waits for it to
 * reach a position gets this at once instead of waiting forever. `cause` is the processor's error.
 */
export class ProjectionFailedError extends Error {
  constructor(readonly processor: string, override readonly cause: unknown) {
    super(`processor ${processor} failed: ${messageOf(cause)}`);
    this.name = 'ProjectionFailedError';
  }
}

/** An error's message; not by `instanceof Error`, which fails for errors built in another realm (native addons under jest). */
function messageOf(cause: unknown): string {
  const message = (cause as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(cause);
}
