import type Database from 'better-sqlite3';
import type { EventType, LogSluiceEvent } from '@app/domain';

/** A prepared statement of a read model. */
export type Statement = Database.Statement;

/**
 * The handlers of a read model: one per event type it folds, each given that type's event
 * (payload narrowed by the type string). Handlers run inside the composing projection's
 * transaction and must be idempotent: replaying an event already applied gives the same rows.
 */
export type ReadModelHandlers<T extends EventType> = { readonly [K in T]: (e: LogSluiceEvent<K>) => void };

/** One read model: the tables it owns (their DDL) and the handlers that fold the log into them. */
export interface ReadModel<T extends EventType = EventType> {
  readonly handlers: ReadModelHandlers<T>;
}

/** What a read model class gives the composition before any instance exists: its tables and their DDL. */
export interface ReadModelTables {
  /** Table names it owns (dropped on reset). */
  readonly tables: readonly string[];
  /** `CREATE ... IF NOT EXISTS` statements of those tables and their indexes. */
  readonly schema: string;
}

/** The event types a read model folds. */
export type HandledBy<M> = M extends { handlers: infer H } ? keyof H : never;

/** Epoch ms at which the event was recorded. */
export function recordedAt(e: Pick<LogSluiceEvent, 'metadata'>): number {
  return e.metadata.at;
}

/** Epoch seconds at which the event was recorded (the `created_at` / `updated_at` columns). */
export function recordedSec(e: Pick<LogSluiceEvent, 'metadata'>): number {
  return Math.floor(e.metadata.at / 1000);
}

/** The event's global position as a number (the `pos` columns: list order and paging cursors). */
export function logPosition(e: Pick<LogSluiceEvent, 'position'>): number {
  return Number(e.position);
}

/** Kept-last-N tables are trimmed every this many inserts; queries apply the limit themselves. */
export const TRIM_EVERY = 20;

/** How many emitted events and log entries are kept per source (and per channel) for the API. */
export const KEPT_PER_SOURCE = 100;
