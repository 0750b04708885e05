import type Database from 'better-sqlite3';
import { EventTypes } from '@app/domain';
import { storedDataJson, writeStatements, type WriteStatement } from '@app/event-store';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables } from './read-model';

type PendingRequestEvents = typeof EventTypes.httpRequestReceived | typeof EventTypes.sourceRunCompleted | typeof EventTypes.sourceDeleted;

/**
 * The endpoint writes a request's data as `{ sourceId, requestId, ...request }` (its text made by
 * `requestDataJson` in the engine), so its JSON text starts with those two ids. Ids hold no
 * character JSON escapes; when the text does not start so (or an id has a backslash), the data is
 * parsed.
 */
const REQUEST_KEYS = /^\{"sourceId":"([^"\\]*)","requestId":"([^"\\]*)"/;

/**
 * The two ids of a recorded request, read from the start of its stored JSON text when the fold
 * has it unparsed ({@link storedDataJson}): the request's headers and body are most of what the
 * log holds per event, and nothing else of them is folded. The same values `JSON.parse` gives:
 * `JSON.stringify` writes each key once, and a string without backslashes is its own text.
 */
export function requestKeysOf(e: { data: { requestId: string; sourceId: string } }): { requestId: string; sourceId: string } {
  const text = storedDataJson(e);
  const m = text === undefined ? null : REQUEST_KEYS.exec(text);
  if (m) return { sourceId: m[1], requestId: m[2] };
  return e.data;
}

/**
 * HTTP requests recorded in an inbox whose run is not recorded yet: start-up runs them, so an
 * acknowledged request is never lost to a crash.
 */
export class PendingRequestsReadModel implements ReadModel<PendingRequestEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_pending_requests'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_pending_requests (request_id TEXT PRIMARY KEY, source_id TEXT, pos INTEGER) WITHOUT ROWID;`,
  };

  readonly handlers: ReadModelHandlers<PendingRequestEvents>;
  /**
   * Requests of the batch being folded, written at its end ({@link endBatch}) unless their run
   * came in the same batch: a request and its run usually commit together, and writing then
   * deleting the row would dirty two pages of every commit for nothing.
   */
  private readonly waiting = new Map<string, { sourceId: string; pos: number }>();
  private readonly insert: WriteStatement;

  constructor(db: Database.Database) {
    this.insert = writeStatements(db).prepare('INSERT OR IGNORE INTO rm_pending_requests (request_id, source_id, pos) VALUES (?, ?, ?)');
    const remove = writeStatements(db).prepare('DELETE FROM rm_pending_requests WHERE request_id = ?');
    const removeOfSource = db.prepare('DELETE FROM rm_pending_requests WHERE source_id = ?');
    this.handlers = {
      [EventTypes.httpRequestReceived]: (e) => {
        const { requestId, sourceId } = requestKeysOf(e);
        if (!this.waiting.has(requestId)) this.waiting.set(requestId, { sourceId, pos: logPosition(e) });
      },
      [EventTypes.sourceRunCompleted]: (e) => {
        if (e.data.requestId && !this.waiting.delete(e.data.requestId)) remove(e.data.requestId);
      },
      [EventTypes.sourceDeleted]: (e) => {
        for (const [id, w] of this.waiting) if (w.sourceId === e.data.sourceId) this.waiting.delete(id);
        removeOfSource.run(e.data.sourceId);
      },
    };
  }

  /** Writes the requests of the batch whose run it did not hold. Call at the end of each batch, inside its transaction. */
  endBatch(): void {
    for (const [id, w] of this.waiting) this.insert(id, w.sourceId, w.pos);
    this.waiting.clear();
  }

  /** Forgets a batch that was not applied (its transaction rolled back). */
  discard(): void {
    this.waiting.clear();
  }
}
