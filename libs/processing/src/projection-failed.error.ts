/**
 * A processor stopped on an error and has not applied a batch since: whoever waits for it to
 * reach a position gets this at once instead of waiting forever. `cause` is the processor's error.
 */
export class ProjectionFailedError extends Error {
  constructor(readonly processor: string, override readonly cause: unknown) {
    super(`processor ${processor} failed: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'ProjectionFailedError';
  }
}
