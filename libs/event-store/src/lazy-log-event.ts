import type { EventMetadata, LogEvent, StoredEvent } from './event-store.port';

/**
 * An event of the log as a fold reads it, with its data and metadata parsed from their stored
 * JSON text only when a handler first reads them (then kept). A fold handles every event but
 * reads the payload of few: the request an endpoint recorded is most of the bytes an event
 * costs the log, and only its two ids are folded (`requestKeysOf`), so parsing it was most of the
 * inline fold's `JSON.parse`, and a fifth of a rebuild's instructions went to parsing events.
 *
 * It reads like a plain event (`e.data`, `e.metadata`) and serialises as one (`toJSON`); what it
 * is not is a plain object: a spread (`{ ...e }`) or `Object.keys` does not see `data` or
 * `metadata`. Folds and their side effects only read fields.
 */
export class LazyLogEvent implements LogEvent {
  private parsedData: unknown;
  private dataParsed = false;
  private parsedMetadata: EventMetadata | undefined;

  constructor(
    readonly type: string,
    readonly position: bigint,
    /** The stored JSON text of `data`. */
    readonly dataJson: string,
    /** The stored JSON text of `metadata`. */
    readonly metadataJson: string,
  ) {}

  get data(): unknown {
    if (!this.dataParsed) {
      this.parsedData = JSON.parse(this.dataJson);
      this.dataParsed = true;
    }
    return this.parsedData;
  }

  get metadata(): EventMetadata {
    return (this.parsedMetadata ??= JSON.parse(this.metadataJson) as EventMetadata);
  }

  toJSON(): LogEvent {
    return { type: this.type, position: this.position, data: this.data, metadata: this.metadata };
  }
}

/** {@link LazyLogEvent} with the id, stream and revision a {@link StoredEvent} has (the inline fold's events). */
export class LazyStoredEvent extends LazyLogEvent implements StoredEvent {
  constructor(
    readonly id: string,
    readonly streamName: string,
    readonly revision: bigint,
    type: string,
    position: bigint,
    dataJson: string,
    metadataJson: string,
  ) {
    super(type, position, dataJson, metadataJson);
  }

  override toJSON(): StoredEvent {
    return { id: this.id, type: this.type, streamName: this.streamName, revision: this.revision, position: this.position, data: this.data, metadata: this.metadata };
  }
}

/** The stored JSON text of an event's data when it is a {@link LazyLogEvent} (undefined otherwise). */
export function storedDataJson(e: object): string | undefined {
  return e instanceof LazyLogEvent ? e.dataJson : undefined;
}
