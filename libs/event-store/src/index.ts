export * from './event-store.port';
export { WrongExpectedRevisionError, StoreUnavailableError, DuplicateEventIdError } from './errors';
export { uuidv7, uuidv5like, uuidv8ordered } from './uuidv7';
export { CatchUpSubscription, type CatchUpSource } from './catch-up-subscription';
export { SqliteEventStore, type SqliteEventStoreOptions, type InlineFold } from './sqlite-event-store';
export { LogPrefetch } from './log-prefetch';
export { WalCheckpointer, type CheckpointResult } from './wal-checkpointer';
export { InMemoryEventStore } from './in-memory-event-store';
export { EventStoreDbEventStore, type EventStoreDbEventStoreOptions } from './eventstoredb-event-store';
