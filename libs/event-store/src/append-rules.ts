import { WrongExpectedRevisionError } from './errors';
import type { AppendOptions, EventMetadata, ExpectedRevision, NewEvent } from './event-store.port';
import { lowerCaseUuid, uuidv7 } from './uuidv7';

/** An event ready to be written: id fixed, data and metadata as JSON text. */
export interface SerializedEvent {
  id: string;
  type: string;
  data: string;
  metadata: string;
  /**
   * The objects `data` and `metadata` were serialised from (`givenData` undefined when the
   * appender gave its text, `dataJson`, unless `dataJsonIsData`), for the inline fold (see
   * LazyLogEvent); not stored.
   */
  givenData?: unknown;
  givenMetadata?: EventMetadata;
}

/** An event with its id fixed and its metadata completed, not yet serialized. */
export interface NormalizedEvent {
  id: string;
  type: string;
  data: unknown;
  metadata: EventMetadata;
}

/**
 * Validates an append's arguments so that a bad input fails its own append before it reaches
 * a shared write transaction or the network. Ids are lower-cased UUIDs (what EventStoreDB
 * returns too) or new UUIDv7s; `metadata.at` defaults to now; `undefined` data becomes null.
 */
export function normalizeAppend(
  stream: string,
  events: readonly NewEvent[],
  options: AppendOptions | undefined,
): { expected: ExpectedRevision; events: NormalizedEvent[] } {
  const expected = validateAppend(stream, events, options);
  const now = Date.now();
  const normalized = new Array<NormalizedEvent>(events.length);
  for (let i = 0; i < events.length; i++) normalized[i] = normalizeEvent(stream, events[i], i, now);
  return { expected, events: normalized };
}

/** {@link normalizeAppend}, with data and metadata as JSON text (so unserializable data fails here). */
/** The longest an append may wait to share a commit (ms). */
export const MAX_LINGER_MS = 1000;

export function prepareAppend(
  stream: string,
  events: readonly NewEvent[],
  options: AppendOptions | undefined,
): { expected: ExpectedRevision; events: SerializedEvent[] } {
  const expected = validateAppend(stream, events, options);
  const now = Date.now();
  const serialized = new Array<SerializedEvent>(events.length);
  for (let i = 0; i < events.length; i++) {
    const event = normalizeEvent(stream, events[i], i, now);
    const given = events[i].dataJson;
    if (given !== undefined && typeof given !== 'string') throw new TypeError(`dataJson of event ${i} appended to ${stream} is not a string`);
    const data: string | undefined = given ?? JSON.stringify(event.data);
    if (data === undefined) throw new TypeError(`data of event ${i} appended to ${stream} has no JSON form`);
    serialized[i] = {
      id: event.id, type: event.type, data, metadata: JSON.stringify(event.metadata),
      givenData: given === undefined || events[i].dataJsonIsData === true ? event.data : undefined, givenMetadata: event.metadata,
    };
  }
  return { expected, events: serialized };
}

function validateAppend(stream: string, events: readonly NewEvent[], options: AppendOptions | undefined): ExpectedRevision {
  if (typeof stream !== 'string' || stream.length === 0) {
    throw new TypeError('stream must be a non-empty string');
  }
  if (!Array.isArray(events) || events.length === 0) {
    throw new RangeError(`append to ${stream} needs at least one event`);
  }
  const expected = options?.expectedRevision ?? 'any';
  validateExpectedRevision(expected);
  const durability: unknown = options?.durability;
  if (durability !== undefined && durability !== 'log' && durability !== 'commit') {
    throw new TypeError(`durability must be 'log' or 'commit', got ${String(durability)}`);
  }
  const linger: unknown = options?.lingerMs;
  if (linger !== undefined && (typeof linger !== 'number' || !Number.isFinite(linger) || linger < 0 || linger > MAX_LINGER_MS)) {
    throw new RangeError(`lingerMs must be a number from 0 to ${MAX_LINGER_MS}, got ${String(linger)}`);
  }
  const onlyWhenBusy: unknown = options?.lingerOnlyWhenBusy;
  if (onlyWhenBusy !== undefined && typeof onlyWhenBusy !== 'boolean') {
    throw new TypeError(`lingerOnlyWhenBusy must be a boolean, got ${String(onlyWhenBusy)}`);
  }
  return expected;
}

function normalizeEvent(stream: string, event: NewEvent, index: number, now: number): NormalizedEvent {
  if (typeof event.type !== 'string' || event.type.length === 0) {
    throw new TypeError(`event ${index} appended to ${stream} has no type`);
  }
  let id: string | undefined;
  if (event.id === undefined) {
    id = uuidv7();
  } else if (typeof event.id !== 'string' || (id = lowerCaseUuid(event.id)) === undefined) {
    throw new TypeError(`event ${index} appended to ${stream} has an id that is not a UUID: ${String(event.id)}`);
  }
  const metadata = event.metadata;
  return {
    id,
    type: event.type,
    data: event.data === undefined ? null : event.data,
    metadata: metadata ? metadataWithTime(metadata, now) : { at: now },
  };
}

/**
 * `{ ...metadata, at: metadata.at ?? now }`, without the spread: in V8 11 (Node 20) an object spread
 * followed by a member the source lacks gives every object made there a hidden class of its own (a
 * new map per event, `--log-maps`), which then makes every site that reads them megamorphic. A copy
 * made by `Object.assign` onto an empty literal and extended follows the cached transitions. A
 * `__proto__` own member (parsed JSON can have one) would be a prototype for `Object.assign`, so
 * such metadata keeps the spread.
 */
function metadataWithTime(metadata: Partial<EventMetadata>, now: number): EventMetadata {
  if (Object.prototype.hasOwnProperty.call(metadata, '__proto__')) return { ...metadata, at: metadata.at ?? now };
  const copy = Object.assign({}, metadata) as EventMetadata;
  copy.at = metadata.at ?? now;
  return copy;
}

function validateExpectedRevision(expected: ExpectedRevision): void {
  if (typeof expected === 'bigint') {
    if (expected < 0n) throw new RangeError(`expected revision ${expected} is negative; use 'no_stream'`);
    return;
  }
  if (expected !== 'any' && expected !== 'no_stream' && expected !== 'stream_exists') {
    throw new TypeError(`unknown expected revision ${String(expected)}`);
  }
}

/** Whether a stream whose last revision is `actual` (-1 when absent) satisfies `expected`. */
export function satisfiesExpectedRevision(expected: ExpectedRevision, actual: number): boolean {
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return actual === -1;
    case 'stream_exists':
      return actual >= 0;
    default:
      return Number(expected) === actual;
  }
}

/** Throws `WrongExpectedRevisionError` unless the stream satisfies `expected`. */
export function assertExpectedRevision(stream: string, expected: ExpectedRevision, actual: number): void {
  if (!satisfiesExpectedRevision(expected, actual)) {
    throw new WrongExpectedRevisionError(stream, expected, BigInt(actual));
  }
}

/**
 * Whether events already stored from `firstRevision` on could have been written by an append
 * with this expected revision, i.e. whether a repeated append is a retry of it.
 */
export function retryMatchesExpected(expected: ExpectedRevision, firstRevision: number): boolean {
  switch (expected) {
    case 'any':
      return true;
    case 'stream_exists':
      return firstRevision >= 1;
    case 'no_stream':
      return firstRevision === 0;
    default:
      return Number(expected) + 1 === firstRevision;
  }
}
