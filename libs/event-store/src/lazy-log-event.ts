import type { EventMetadata, LogEvent, StoredEvent } from './event-store.port';
import { readsAsItsJson } from './json-identity';

/** `given` when it reads exactly as its JSON would, else `text` parsed: what a rebuild reading the log sees. */
function readBack<T>(given: T | undefined, text: string): T {
  return given !== undefined && readsAsItsJson(given) ? given : (JSON.parse(text) as T);
}

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
 *
 * An event this process has just appended may come with the objects its text was serialised
 * from (`given`): they are read instead of parsing the text when {@link readsAsItsJson} holds,
 * so the fold sees what a rebuild parsing the log would. They are the appender's own objects, not
 * copies: neither the fold nor its side effects change what they read.
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
    /** What `dataJson` was serialised from, when this process appended it (undefined: not known). */
    private givenData?: unknown,
    /** What `metadataJson` was serialised from, likewise. */
    private givenMetadata?: EventMetadata,
  ) {}

  get data(): unknown {
    if (!this.dataParsed) {
      const given = this.givenData;
      this.givenData = undefined;
      this.parsedData = readBack(given, this.dataJson);
      this.dataParsed = true;
    }
    return this.parsedData;
  }

  get metadata(): EventMetadata {
    if (this.parsedMetadata === undefined) {
      const given = this.givenMetadata;
      this.givenMetadata = undefined;
      this.parsedMetadata = readBack(given, this.metadataJson);
    }
    return this.parsedMetadata;
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
    givenData?: unknown,
    givenMetadata?: EventMetadata,
  ) {
    super(type, position, dataJson, metadataJson, givenData, givenMetadata);
  }

  override toJSON(): StoredEvent {
    return { id: this.id, type: this.type, streamName: this.streamName, revision: this.revision, position: this.position, data: this.data, metadata: this.metadata };
  }
}

/** The stored JSON text of an event's data when it is a {@link LazyLogEvent} (undefined otherwise). */
export function storedDataJson(e: object): string | undefined {
  return e instanceof LazyLogEvent ? e.dataJson : undefined;
}
