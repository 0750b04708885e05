import type Database from 'better-sqlite3';
import { EventTypes } from '@app/domain';
import { KEPT_PER_SOURCE, logPosition, ReadModel, ReadModelHandlers, ReadModelTables, recordedAt, TRIM_EVERY } from './read-model';

/** A run's or hook's log entry as it entered the read model, for live streams (SSE). */
export interface LoggedEntry {
  sourceId: string;
  /** Log position of the event: the entry's id, increasing per source. */
  pos: number;
  kind: string;
  at: number;
  data: Record<string, unknown>;
}

type SourceLogEvents = typeof EventTypes.sourceRunCompleted | typeof EventTypes.sourceHookRan | typeof EventTypes.sourceDeleted;

/**
 * The last {@link KEPT_PER_SOURCE} runs and hook runs of each source, with their logs
 * (`/v1/sources/{id}/logs`). Rows are keyed by log position, so a replay rewrites the same row.
 */
export class SourceLogsReadModel implements ReadModel<SourceLogEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_source_logs'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_source_logs (source_id TEXT, pos INTEGER, kind TEXT, data TEXT, at INTEGER, PRIMARY KEY (source_id, pos)) WITHOUT ROWID;`,
  };

  readonly handlers: ReadModelHandlers<SourceLogEvents>;
  /** Collect entries for live streams (off while rebuilding, when nobody listens). */
  live = false;
  private logged: LoggedEntry[] = [];

  constructor(db: Database.Database) {
    const insert = db.prepare('INSERT OR REPLACE INTO rm_source_logs (source_id, pos, kind, data, at) VALUES (?, ?, ?, ?, ?)');
    const trim = db.prepare(`DELETE FROM rm_source_logs WHERE source_id = ? AND pos <= (
        SELECT pos FROM rm_source_logs WHERE source_id = ? ORDER BY pos DESC LIMIT 1 OFFSET ${KEPT_PER_SOURCE})`);
    const removeAll = db.prepare('DELETE FROM rm_source_logs WHERE source_id = ?');
    const add = (sourceId: string, pos: number, kind: string, data: Record<string, unknown>, at: number) => {
      insert.run(sourceId, pos, kind, JSON.stringify(data), at);
      if (this.live) this.logged.push({ sourceId, pos, kind, at, data });
      if (pos % TRIM_EVERY === 0) trim.run(sourceId, sourceId);
    };
    this.handlers = {
      [EventTypes.sourceRunCompleted]: (e) => {
        const d = e.data;
        add(d.sourceId, logPosition(e), 'run',
          { trigger: d.trigger, ok: d.ok, error: d.error, logs: d.logs, emitted: d.emitted, duration_ms: d.durationMs }, recordedAt(e));
      },
      [EventTypes.sourceHookRan]: (e) => {
        const d = e.data;
        add(d.sourceId, logPosition(e), `hook:${d.hook}`, { ok: d.ok, error: d.error, logs: d.logs, duration_ms: d.durationMs }, recordedAt(e));
      },
      [EventTypes.sourceDeleted]: (e) => removeAll.run(e.data.sourceId),
    };
  }

  /** Entries folded since the last call (call after the transaction committed). */
  takeLogged(): LoggedEntry[] {
    const out = this.logged;
    this.logged = [];
    return out;
  }

  /** Forgets the entries of a batch whose transaction rolled back. */
  discard(): void {
    this.logged = [];
  }
}
