import type Database from 'better-sqlite3';
import { EventTypes } from '@app/domain';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables } from './read-model';

type PendingRequestEvents = typeof EventTypes.httpRequestReceived | typeof EventTypes.sourceRunCompleted | typeof EventTypes.sourceDeleted;

/**
 * HTTP requests recorded in an inbox whose run is not recorded yet: start-up runs them, so an
 * acknowledged request is never lost to a crash.
 */
export class PendingRequestsReadModel implements ReadModel<PendingRequestEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_pending_requests'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_pending_requests (request_id TEXT PRIMARY KEY, source_id TEXT, pos INTEGER);`,
  };

  readonly handlers: ReadModelHandlers<PendingRequestEvents>;

  constructor(db: Database.Database) {
    const insert = db.prepare('INSERT OR IGNORE INTO rm_pending_requests (request_id, source_id, pos) VALUES (?, ?, ?)');
    const remove = db.prepare('DELETE FROM rm_pending_requests WHERE request_id = ?');
    const removeOfSource = db.prepare('DELETE FROM rm_pending_requests WHERE source_id = ?');
    this.handlers = {
      [EventTypes.httpRequestReceived]: (e) => insert.run(e.data.requestId, e.data.sourceId, logPosition(e)),
      [EventTypes.sourceRunCompleted]: (e) => {
        if (e.data.requestId) remove.run(e.data.requestId);
      },
      [EventTypes.sourceDeleted]: (e) => removeOfSource.run(e.data.sourceId),
    };
  }
}
