/** Metadata carried by every stored event. `at` is epoch milliseconds when the event was recorded. */
export interface EventMetadata {
  correlationId?: string;
  causationId?: string;
  /** Who caused it: `u_...` account id, `system`, or `dc_...` for a component. */
  actor?: string;
  at: number;
}

/**
 * The part of an event its type decides: a stable type string and its payload. The store is
 * generic over it; a domain names its own union (a discriminated union on `type`) and gets
 * typed appends and reads.
 */
export interface EventShape {
  /** A stable string such as `source.deployed.v1`, never a class name. */
  type: string;
  data: unknown;
}

/** An event to append. `id` (UUIDv7) doubles as the idempotency key; generated when absent. */
export type NewEvent<E extends EventShape = EventShape> = E & {
  id?: string;
  metadata?: Partial<EventMetadata>;
  /**
   * `JSON.stringify(data)`, when the appender has made that text anyway: the store writes it as
   * the event's data instead of serialising `data` again. It must be exactly that text, or with
   * `dataJsonIsData` that text with the members of `data` in another order (the store does not
   * check), since a fold or a rebuild reads it back as the event's data.
   */
  dataJson?: string;
  /**
   * `dataJson` is `data`'s text with its members perhaps in another order (an emit's record,
   * its payload last: `emitRecordJson`): the fold that follows the append may read `data` itself,
   * as it does when the store serialises it, instead of parsing `dataJson`.
   */
  dataJsonIsData?: true;
};

/**
 * What a fold of the whole log reads of an event: its type, payload, metadata and position, not
 * its id, stream or revision (a read-model rebuild reads only these columns).
 */
export type LogEvent<E extends EventShape = EventShape> = E & {
  /** Global position in the log (strictly increasing in read-all order). */
  position: bigint;
  metadata: EventMetadata;
};

/** An event as read back from the store. Revisions are 0-based per stream, positions 1-based and gap-free (embedded). */
export type StoredEvent<E extends EventShape = EventShape> = LogEvent<E> & {
  id: string;
  streamName: string;
  /** 0-based index of the event in its stream. */
  revision: bigint;
};

/**
 * Expected revision of a stream before an append:
 * - a bigint: the revision of the stream's last event (exactly);
 * - `no_stream`: the stream must not exist;
 * - `stream_exists`: the stream must have at least one event;
 * - `any`: no check.
 */
export type ExpectedRevision = bigint | 'any' | 'no_stream' | 'stream_exists';

export interface AppendOptions {
  expectedRevision?: ExpectedRevision;
  /**
   * When the append's promise resolves. `log` (default): once the append is as durable as the
   * store makes its log (SQLite with `full`: after an fsync of the WAL that started after its
   * commit). `commit`: once committed, which survives a crash of the process (SIGKILL) but, until
   * the store's next fsync, not a power loss. Only for records whose loss repeats work that
   * produces the same ids again: a run re-derived from its durable request, a delivery outcome
   * whose loss causes a redelivery with the same `webhook-id`. Stores without that distinction
   * treat both alike.
   */
  durability?: 'log' | 'commit';
  /**
   * The append may wait up to this many milliseconds for other appends to share its commit (one
   * transaction, one fsync): it is written with the next append that does not wait, or when the
   * time is up. Default 0: written as soon as the writer is free. Stores that do not group
   * commits ignore it.
   */
  lingerMs?: number;
  /**
   * With `durability: 'commit'`: while an fsync of the log is in progress, the append waits for it
   * to end, so the appends that fsync acknowledges are answered before this one's commit takes the
   * writer. For a record whose caller is answered on something else (a custom HTTP response waits
   * for its request's fsync and its run's result, not for the run's record). Written with the next
   * append that does not wait, or as soon as the fsync ends. Stores without fsyncs of their own
   * ignore it.
   */
  afterSyncInProgress?: boolean;
  /**
   * With `lingerMs`: the append lingers only while appends that wait for an fsync (`durability:
   * 'log'`, a request to record, say) arrive at a pace that brings 1.5 or more of them within the
   * linger (`LINGER_BUSY_ARRIVALS` in the SQLite store); otherwise it is written as soon as the
   * writer is free, as without `lingerMs`. For a record that follows such an append (a run's record after its
   * request): at busy rates it shares a commit with the next requests and their records, at
   * everyday rates it does not wait for a commit nobody else will join. Stores that do not group
   * commits ignore it.
   */
  lingerOnlyWhenBusy?: boolean;
}

export interface AppendResult {
  /** Revision of the stream's last event after the append. */
  nextExpectedRevision: bigint;
  /** Global position of the last appended event. */
  position: bigint;
}

export interface ReadStreamOptions {
  /** Inclusive. Default 0. */
  fromRevision?: bigint;
  maxCount?: number;
}

export interface ReadAllOptions {
  /** Exclusive: events strictly after this position. Default: from the beginning (0n). */
  after?: bigint;
  maxCount?: number;
}

/** Called with batches of events in log order; the subscription waits for the promise before the next batch. */
export type BatchHandler = (events: StoredEvent[]) => Promise<void> | void;

export interface SubscribeToAllOptions {
  /** Exclusive: deliver events strictly after this position (a checkpoint). Default 0n = everything. */
  after?: bigint;
  /** Largest batch handed to the handler. Default 500. */
  maxBatch?: number;
  /** Called when the handler throws; the subscription stops after reporting. */
  onError?: (err: unknown) => void;
}

/** A live catch-up subscription. */
export interface Subscription {
  /**
   * Resolves when the subscription has delivered every event appended before this call (or stopped).
   * Rejects with the error if the subscription stopped because its handler (or the store) failed.
   */
  caughtUp(): Promise<void>;
  /** Position of the last event handed to the handler and completed. */
  readonly position: bigint;
  /** Stops delivery; resolves once the batch in progress has completed (so never await it inside the handler). */
  stop(): Promise<void>;
}

/**
 * The event store port. Every adapter passes the shared contract suite
 * (`libs/event-store/test/event-store.contract.ts`). `E` narrows what may be appended (a
 * domain's event union); reads stay `StoredEvent`, since a log may hold types this build does
 * not know, and the domain narrows them at its own boundary.
 */
export interface EventStore<E extends EventShape = EventShape> {
  /**
   * Appends events atomically to one stream after checking the expected revision.
   * Throws `WrongExpectedRevisionError` on mismatch. Appending a batch whose event ids were
   * already appended to this stream (a retry) is a no-op that returns the original result.
   */
  append(stream: string, events: readonly NewEvent<E>[], options?: AppendOptions): Promise<AppendResult>;
  /** Events of one stream in revision order; `[]` for a stream that does not exist. */
  readStream(stream: string, options?: ReadStreamOptions): Promise<StoredEvent[]>;
  /** Revision of the stream's last event, or -1n when it does not exist. */
  streamRevision(stream: string): Promise<bigint>;
  /** Events of every stream in global position order. */
  readAll(options?: ReadAllOptions): Promise<StoredEvent[]>;
  /** Position of the last event in the log (0n when empty). */
  headPosition(): Promise<bigint>;
  /** Catch-up subscription: past events from the checkpoint, then live ones, in order, in batches. */
  subscribeToAll(handler: BatchHandler, options?: SubscribeToAllOptions): Subscription;
  close(): Promise<void>;
}
