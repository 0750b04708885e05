import Database from 'better-sqlite3';
import type { EventData, EventType, StoredSluiceEvent } from '@app/domain';
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
