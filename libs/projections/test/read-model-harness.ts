import Database from 'better-sqlite3';
import type { EventData, EventType, StoredSluiceEvent } from '@app/domain';
import { ReadModelQueries } from '../src/read-model-queries';
import { READ_MODEL_SCHEMA } from '../src/read-model-schema';
import type { ReadModelTables } from '../src/read-models/read-model';

/** Recording time of the event at position 1 of a test log; later positions are one second apart. */
export const T0 = 1_700_000_000_000;

/**
 * A log for given / when / then tests of read models: `log.event(type, data)` gives the next
 * stored event (positions 1, 2, ...; recorded one second apart unless `at` is given).
 */
export class TestLog {
  private position = 0;

  event<T extends EventType>(type: T, data: EventData<T>, at?: number): StoredSluiceEvent<T> {
    const position = ++this.position;
    return {
      type, data, id: `ev-${position}`, streamName: 'test', revision: BigInt(position - 1), position: BigInt(position),
      metadata: { at: at ?? T0 + position * 1000 },
    } as StoredSluiceEvent<T>;
  }
}

/** An in-memory SQLite database with the tables of the given read models (real SQLite, nothing mocked). */
export function databaseWith(...definitions: ReadModelTables[]): Database.Database {
  const db = new Database(':memory:');
  for (const d of definitions) db.exec(d.schema);
  return db;
}

/**
 * Writes events into the log's table as the store keeps it (`events`: position, type and the
 * JSON text of `data`, the columns the queries read back, such as a delivery's body or a kept
 * summary's payload), creating the table when it is missing.
 */
export function recordInLog(db: Database.Database, events: StoredSluiceEvent[]): void {
  db.exec('CREATE TABLE IF NOT EXISTS events (position INTEGER PRIMARY KEY, type TEXT NOT NULL, data TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO events (position, type, data) VALUES (?, ?, ?)');
  for (const e of events) insert.run(e.position, e.type, JSON.stringify(e.data));
}

/** The API's queries over `db`, once the tables they prepare statements on exist (every read model's). */
export function queriesOver(db: Database.Database): ReadModelQueries {
  db.exec(READ_MODEL_SCHEMA);
  return new ReadModelQueries(db);
}

/** Folds events into one read model, in one transaction, as the composed projection does. */
export function fold(db: Database.Database, model: { handlers: object; endBatch?(): void }, events: StoredSluiceEvent[]): void {
  const handlers = model.handlers as Partial<Record<string, (e: StoredSluiceEvent) => void>>;
  db.transaction(() => {
    for (const e of events) handlers[e.type]?.(e);
    model.endBatch?.();
  })();
}

/** Rows of a query, as plain objects. */
export function rows<T = Record<string, unknown>>(db: Database.Database, sql: string, ...params: unknown[]): T[] {
  return db.prepare(sql).all(...params) as T[];
}
