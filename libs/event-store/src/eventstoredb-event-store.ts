import type {
  EventData,
  EventStoreDBClient,
  JSONType,
  Position,
  ReadPosition,
  StreamingRead,
} from '@eventstore/db-client';
import { eventStoreDb } from './eventstoredb-client';
import { normalizeAppend } from './append-rules';
import { StoreUnavailableError } from './errors';
import type {
  AppendOptions,
  AppendResult,
  BatchHandler,
  EventStore,
  EventShape,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  StoredEvent,
  SubscribeToAllOptions,
  Subscription,
} from './event-store.port';
import { isApplicationEvent, toPortError, toStoredEvent } from './eventstoredb-events';
import { EventStoreDbSubscription } from './eventstoredb-subscription';

/** How to reach EventStoreDB: a connection string such as `esdb://host:2113?tls=false`, or a client. */
export type EventStoreDbEventStoreOptions = { connectionString: string } | { client: EventStoreDBClient };

const PAGE = 1000;
// The client's constants, as literals so that reading them does not load the package.
const START = 'start';
const END = 'end';
const FORWARDS = 'forwards';
const BACKWARDS = 'backwards';

/**
 * The scale-out event store on EventStoreDB (KurrentDB) 22.10 or later. Positions are `$all`
 * commit positions: strictly increasing but not gap-free. `$all` reads and subscriptions leave
 * out system events (types starting with `$`). Expected revisions and idempotent retries are
 * enforced by the server; event ids are unique per stream only.
 */
export class EventStoreDbEventStore<E extends EventShape = EventShape> implements EventStore<E> {
  /** The underlying client, for what the port does not cover (projections, persistent subscriptions). */
  readonly client: EventStoreDBClient;
  private readonly subscriptions = new Set<EventStoreDbSubscription>();
  private closed = false;

  constructor(options: EventStoreDbEventStoreOptions) {
    this.client =
      'client' in options ? options.client : eventStoreDb().EventStoreDBClient.connectionString(options.connectionString);
  }

  async append(stream: string, events: readonly NewEvent<E>[], options?: AppendOptions): Promise<AppendResult> {
    if (this.closed) throw new StoreUnavailableError('the event store is closed');
    const { expected, events: normalized } = normalizeAppend(stream, events, options);
    const eventData = normalized.map(
      (event): EventData => ({
        id: event.id,
        contentType: 'application/json',
        type: event.type,
        data: event.data as JSONType,
        metadata: event.metadata as unknown as JSONType,
      }),
    );
    let result;
    try {
      result = await this.client.appendToStream(stream, eventData, { expectedRevision: expected });
    } catch (error) {
      throw toPortError(error, stream, expected);
    }
    // The server answers an idempotent retry without a position; read it from the stored event.
    const position = result.position?.commit ?? (await this.positionOf(stream, result.nextExpectedRevision));
    return { nextExpectedRevision: result.nextExpectedRevision, position };
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    const maxCount = countOf(options.maxCount);
    if (maxCount === 0) return [];
    const from = options.fromRevision ?? 0n;
    const events: StoredEvent[] = [];
    try {
      await consume(
        this.client.readStream(stream, {
          direction: FORWARDS,
          fromRevision: from > 0n ? from : START,
          maxCount: maxCount ?? Number.MAX_SAFE_INTEGER,
        }),
        (resolved) => {
          if (resolved.event) events.push(toStoredEvent(resolved));
          return true;
        },
      );
    } catch (error) {
      if (error instanceof eventStoreDb().StreamNotFoundError) return [];
      throw toPortError(error);
    }
    return events;
  }

  async streamRevision(stream: string): Promise<bigint> {
    let revision = -1n;
    try {
      await consume(
        this.client.readStream(stream, { direction: BACKWARDS, fromRevision: END, maxCount: 1 }),
        (resolved) => {
          if (resolved.event) revision = resolved.event.revision;
          return false;
        },
      );
    } catch (error) {
      if (error instanceof eventStoreDb().StreamNotFoundError) return -1n;
      throw toPortError(error);
    }
    return revision;
  }

  async readAll(options: ReadAllOptions = {}): Promise<StoredEvent[]> {
    const wanted = countOf(options.maxCount) ?? Number.MAX_SAFE_INTEGER;
    const after = options.after ?? 0n;
    const events: StoredEvent[] = [];
    if (wanted === 0) return events;
    // Read page by page because system events count against a page but are left out.
    let from: ReadPosition = after > 0n ? { commit: after, prepare: after } : START;
    for (;;) {
      let read = 0;
      let last: Position | undefined;
      try {
        await consume(this.client.readAll({ direction: FORWARDS, fromPosition: from, maxCount: PAGE }), (resolved) => {
          read++;
          last = resolved.event?.position ?? last;
          if (!isApplicationEvent(resolved)) return true;
          const event = toStoredEvent(resolved);
          // A start position is inclusive, and each page starts at the previous page's last event.
          if (event.position <= after || event.position <= (events.at(-1)?.position ?? 0n)) return true;
          events.push(event);
          return events.length < wanted;
        });
      } catch (error) {
        throw toPortError(error);
      }
      if (events.length >= wanted || read < PAGE || !last) return events;
      from = last;
    }
  }

  async headPosition(): Promise<bigint> {
    let from: ReadPosition = END;
    for (;;) {
      let read = 0;
      let last: Position | undefined;
      let head: bigint | undefined;
      try {
        await consume(this.client.readAll({ direction: BACKWARDS, fromPosition: from, maxCount: PAGE }), (resolved) => {
          read++;
          last = resolved.event?.position ?? last;
          if (!isApplicationEvent(resolved)) return true;
          head = toStoredEvent(resolved).position;
          return false;
        });
      } catch (error) {
        throw toPortError(error);
      }
      if (head !== undefined) return head;
      if (read < PAGE || !last) return 0n;
      from = last;
    }
  }

  subscribeToAll(handler: BatchHandler, options?: SubscribeToAllOptions): Subscription {
    if (this.closed) throw new StoreUnavailableError('the event store is closed');
    const subscription: EventStoreDbSubscription = new EventStoreDbSubscription(
      this.client,
      handler,
      () => this.headPosition(),
      options,
      () => this.subscriptions.delete(subscription),
    );
    this.subscriptions.add(subscription);
    return subscription;
  }

  /** Stops the subscriptions (waiting for handlers in progress) and closes the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    await this.client.dispose();
  }

  private async positionOf(stream: string, revision: bigint): Promise<bigint> {
    const [event] = await this.readStream(stream, { fromRevision: revision, maxCount: 1 });
    if (!event) throw new Error(`EventStoreDB acknowledged ${stream}@${revision} but it cannot be read back`);
    return event.position;
  }
}

/** Feeds a read to `visit` until it returns false or the read ends; cancels the rest of the read. */
async function consume<E>(read: StreamingRead<E>, visit: (item: E) => boolean): Promise<void> {
  for await (const item of read) {
    if (!visit(item)) {
      await read.cancel();
      return;
    }
  }
}

function countOf(maxCount: number | undefined): number | undefined {
  if (maxCount === undefined) return undefined;
  if (!Number.isInteger(maxCount) || maxCount < 0) {
    throw new RangeError(`maxCount must be a non-negative integer, got ${maxCount}`);
  }
  return maxCount;
}
