import type { ExpectedRevision } from './event-store.port';

/**
 * The stream was not at the expected revision, so nothing was appended.
 * `actual` is the stream's current revision (-1n when the stream does not exist).
 * Callers map it to a 409 and may reload and retry.
 */
export class WrongExpectedRevisionError extends Error {
  readonly code = 'wrong_expected_revision';

  constructor(
    readonly stream: string,
    readonly expected: ExpectedRevision,
    readonly actual: bigint,
  ) {
    super(`stream ${stream} is at revision ${actual}, expected ${String(expected)}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

/**
 * The store cannot take writes right now (closed, locked by another process, disk failure,
 * server unreachable). Nothing of the failed append was written; retrying later is safe
 * because event ids make appends idempotent.
 */
export class StoreUnavailableError extends Error {
  readonly code = 'store_unavailable';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * An event id is already used by a different event (another stream or another position), so
 * the append is neither new nor a retry. Only stores with globally unique event ids raise it.
 */
export class DuplicateEventIdError extends Error {
  readonly code = 'duplicate_event_id';

  constructor(
    readonly stream: string,
    readonly eventId: string,
  ) {
    super(`event id ${eventId} appended to ${stream} is already used by another event`);
    this.name = 'DuplicateEventIdError';
  }
}
