/**
 * What a fold of the whole log reads of the `events` table ({@link LogEvent}: no id, stream or
 * revision), in position order: events strictly after `?`, at most `?`. Shared by the store's own
 * read (`SqliteEventStore.readLogSync`) and the rebuild's read-ahead thread (`LogPrefetch`).
 */
export const READ_LOG_SQL = 'SELECT position, type, data, metadata FROM events WHERE position > ? ORDER BY position LIMIT ?';

/** A row of {@link READ_LOG_SQL} read raw: position, type, data (JSON text), metadata (JSON text). */
export type LogRow = [number, string, string, string];
