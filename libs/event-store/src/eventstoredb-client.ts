import type * as EventStoreDb from '@eventstore/db-client';

let loaded: typeof EventStoreDb | undefined;

/**
 * The EventStoreDB client package, loaded on first use: it pulls in gRPC (about 130 ms at
 * startup), which the embedded mode and unit tests importing this library never need.
 */
export function eventStoreDb(): typeof EventStoreDb {
  loaded ??= require('@eventstore/db-client') as typeof EventStoreDb;
  return loaded;
}
