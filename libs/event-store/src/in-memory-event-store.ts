import { prepareAppend, retryMatchesExpected, satisfiesExpectedRevision, type SerializedEvent } from './append-rules';
import { CatchUpSubscription } from './catch-up-subscription';
import { DuplicateEventIdError, StoreUnavailableError, WrongExpectedRevisionError } from './errors';
import type {
  AppendOptions,
  AppendResult,
  BatchHandler,
  EventStore,
  ExpectedRevision,
  EventShape,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  StoredEvent,
  SubscribeToAllOptions,
  Subscription,
} from './event-store.port';

/** An event as kept in memory: data and metadata as JSON text, so reads never share objects with writers. */
interface MemoryRecord extends SerializedEvent {
  stream: string;
  revision: number;
  position: number;
}

/**
 * An event store in process memory with the semantics of the SQLite store (1-based gap-free
 * positions, globally unique event ids, idempotent retries, atomic appends), for unit tests.
 * Data goes through JSON on the way in and out, as it would through a real store.
 */
export class InMemoryEventStore<E extends EventShape = EventShape> implements EventStore<E> {
  private readonly log: MemoryRecord[] = [];
  private readonly streams = new Map<string, MemoryRecord[]>();
  private readonly byId = new Map<string, MemoryRecord>();
  private readonly appendedListeners = new Set<(headPosition: bigint) => void>();
  private readonly subscriptions = new Set<CatchUpSubscription>();
  private closed = false;

  async append(stream: string, events: readonly NewEvent<E>[], options?: AppendOptions): Promise<AppendResult> {
    if (this.closed) throw new StoreUnavailableError('the event store is closed');
    const prepared = prepareAppend(stream, events, options);
    const existing = this.streams.get(stream);
    const actual = existing ? existing.length - 1 : -1;
    if (!satisfiesExpectedRevision(prepared.expected, actual)) {
      const original = this.findRetriedAppend(stream, prepared.expected, prepared.events);
      if (original) return original;
      throw new WrongExpectedRevisionError(stream, prepared.expected, BigInt(actual));
    }
    const seen = new Set<string>();
    for (const event of prepared.events) {
      if (this.byId.has(event.id) || seen.has(event.id)) {
        const original = this.findRetriedAppend(stream, prepared.expected, prepared.events);
        if (original) return original;
        throw new DuplicateEventIdError(stream, event.id);
      }
      seen.add(event.id);
    }
    const records = existing ?? [];
    for (const event of prepared.events) {
      const record: MemoryRecord = { id: event.id, type: event.type, data: event.data, metadata: event.metadata, stream, revision: records.length, position: this.log.length + 1 };
      records.push(record);
      this.log.push(record);
      this.byId.set(record.id, record);
    }
    if (!existing) this.streams.set(stream, records);
    const head = BigInt(this.log.length);
    const result = { nextExpectedRevision: BigInt(records.length - 1), position: head };
    this.notifyAppended(head);
    return result;
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    const records = this.streams.get(stream) ?? [];
    const from = clampIndex(options.fromRevision ?? 0n);
    return records.slice(from, from + countOf(options.maxCount)).map(toStoredEvent);
  }

  async streamRevision(stream: string): Promise<bigint> {
    return BigInt((this.streams.get(stream)?.length ?? 0) - 1);
  }

  async readAll(options: ReadAllOptions = {}): Promise<StoredEvent[]> {
    return this.readAllSync(options.after ?? 0n, countOf(options.maxCount));
  }

  async headPosition(): Promise<bigint> {
    return BigInt(this.log.length);
  }

  subscribeToAll(handler: BatchHandler, options?: SubscribeToAllOptions): Subscription {
    if (this.closed) throw new StoreUnavailableError('the event store is closed');
    const subscription: CatchUpSubscription = new CatchUpSubscription(
      {
        readAll: (after, maxCount) => this.readAllSync(after, maxCount),
        headPosition: () => BigInt(this.log.length),
        onAppended: (listener) => this.onAppended(listener),
      },
      handler,
      options,
      () => this.subscriptions.delete(subscription),
    );
    this.subscriptions.add(subscription);
    return subscription;
  }

  /** Calls `listener` with the new head position after each append; returns the remover. */
  onAppended(listener: (headPosition: bigint) => void): () => void {
    this.appendedListeners.add(listener);
    return () => this.appendedListeners.delete(listener);
  }

  /** Stops the subscriptions; appends issued afterwards fail with StoreUnavailableError. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
  }

  private findRetriedAppend(
    stream: string,
    expected: ExpectedRevision,
    events: SerializedEvent[],
  ): AppendResult | undefined {
    const first = this.byId.get(events[0].id);
    if (!first || first.stream !== stream || !retryMatchesExpected(expected, first.revision)) return undefined;
    let last = first;
    for (let i = 1; i < events.length; i++) {
      const record = this.byId.get(events[i].id);
      if (!record || record.stream !== stream || record.revision !== first.revision + i) return undefined;
      last = record;
    }
    return { nextExpectedRevision: BigInt(last.revision), position: BigInt(last.position) };
  }

  private readAllSync(after: bigint, maxCount: number): StoredEvent[] {
    // Position p lives at index p - 1, so the events after `after` start at index `after`.
    const from = clampIndex(after);
    return this.log.slice(from, from + maxCount).map(toStoredEvent);
  }

  private notifyAppended(head: bigint): void {
    for (const listener of this.appendedListeners) {
      try {
        listener(head);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}

function toStoredEvent(record: MemoryRecord): StoredEvent {
  return {
    id: record.id,
    type: record.type,
    streamName: record.stream,
    revision: BigInt(record.revision),
    position: BigInt(record.position),
    data: JSON.parse(record.data),
    metadata: JSON.parse(record.metadata),
  };
}

function clampIndex(value: bigint): number {
  return value <= 0n ? 0 : Number(value);
}

function countOf(maxCount: number | undefined): number {
  if (maxCount === undefined) return Number.MAX_SAFE_INTEGER;
  if (!Number.isInteger(maxCount) || maxCount < 0) {
    throw new RangeError(`maxCount must be a non-negative integer, got ${maxCount}`);
  }
  return maxCount;
}
