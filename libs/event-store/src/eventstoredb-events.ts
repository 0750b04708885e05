import type { AllStreamResolvedEvent, ResolvedEvent } from '@eventstore/db-client';
import { eventStoreDb } from './eventstoredb-client';
import { StoreUnavailableError, WrongExpectedRevisionError } from './errors';
import type { EventMetadata, ExpectedRevision, StoredEvent } from './event-store.port';

/** Whether a recorded event belongs to the application: system events (`$...` types, links) do not. */
export function isApplicationEvent(resolved: ResolvedEvent | AllStreamResolvedEvent): boolean {
  const event = resolved.event;
  return event !== undefined && !event.type.startsWith('$');
}

/**
 * Maps a recorded EventStoreDB event to ours; `position` is the commit position, which is unique
 * per event for appends made through gRPC (one implicit transaction each).
 */
export function toStoredEvent(resolved: ResolvedEvent | AllStreamResolvedEvent): StoredEvent {
  const event = resolved.event;
  if (!event) throw new Error('EventStoreDB returned an unresolved link');
  const position = event.position?.commit ?? resolved.commitPosition;
  if (position === undefined) {
    // Checkpoints would be wrong without positions; servers before 22.10 omit them on stream reads.
    throw new Error(`EventStoreDB returned ${event.streamId}@${event.revision} without a position (needs 22.10+)`);
  }
  return {
    id: event.id,
    type: event.type,
    streamName: event.streamId,
    revision: event.revision,
    position,
    data: event.data,
    metadata: toMetadata(event.metadata, event.created),
  };
}

function toMetadata(raw: unknown, created: Date): EventMetadata {
  if (raw !== null && typeof raw === 'object' && !Array.isArray(raw) && !(raw instanceof Uint8Array)) {
    const metadata = raw as Partial<EventMetadata>;
    return { ...metadata, at: typeof metadata.at === 'number' ? metadata.at : created.getTime() };
  }
  return { at: created.getTime() };
}

/** Maps client errors to the port's: version conflicts and unreachable servers; others pass through. */
export function toPortError(error: unknown, stream?: string, expected?: ExpectedRevision): unknown {
  const { ErrorType, isCommandError, WrongExpectedVersionError } = eventStoreDb();
  if (error instanceof WrongExpectedVersionError) {
    const actual = error.actualVersion === 'no_stream' ? -1n : error.actualVersion;
    return new WrongExpectedRevisionError(stream ?? error.streamName, expected ?? error.expectedVersion, actual);
  }
  if (error instanceof Error && isCommandError(error)) {
    switch (error.type) {
      case ErrorType.UNAVAILABLE:
      case ErrorType.DEADLINE_EXCEEDED:
      case ErrorType.TIMEOUT:
      case ErrorType.NOT_LEADER:
      case ErrorType.CANCELLED:
        return new StoreUnavailableError(`EventStoreDB cannot be reached: ${error.message}`, { cause: error });
    }
  }
  return error;
}
