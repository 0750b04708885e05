import type Database from 'better-sqlite3';
import { writeStatements } from '@app/event-store';
import { EventTypes, type SourceHookRan, type SourceRunCompleted } from '@app/domain';
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

/** A run's entry, as the API lists it, from its `source.run_completed.v1`. */
function runEntry(d: SourceRunCompleted): Record<string, unknown> {
  return { trigger: d.trigger, ok: d.ok, error: d.error, logs: d.logs, emitted: d.emitted, duration_ms: d.durationMs };
}

/** A hook run's entry, as the API lists it, from its `source.hook_ran.v1`. */
function hookEntry(d: SourceHookRan): Record<string, unknown> {
  return { ok: d.ok, error: d.error, logs: d.logs, duration_ms: d.durationMs };
}

/**
 * The entry of the event at one position of the log, from its type and its `data` text: what
 * the fold would have stored for it, which `rm_source_logs` no longer copies. `undefined` for
 * an event that makes no entry.
 */
export function sourceLogDataOf(type: string, data: string): Record<string, unknown> | undefined {
  if (type === EventTypes.sourceRunCompleted) return runEntry(JSON.parse(data) as SourceRunCompleted);
  if (type === EventTypes.sourceHookRan) return hookEntry(JSON.parse(data) as SourceHookRan);
  return undefined;
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
CREATE TABLE IF NOT EXISTS rm_source_logs (source_id TEXT, pos INTEGER, kind TEXT, at INTEGER, PRIMARY KEY (source_id, pos)) WITHOUT ROWID;`,
  };

  readonly handlers: ReadModelHandlers<SourceLogEvents>;
  /** Collect entries for live streams (off while rebuilding, when nobody listens). */
  live = false;
  private logged: LoggedEntry[] = [];

  constructor(db: Database.Database) {
    // The entry's data (trigger, outcome, logs, counts) stays in the run's record in the log, at
    // `pos`: the queries read it from there (sourceLogDataOf), where a copy here wrote every
    // line a run logged once more.
    const insert = writeStatements(db).prepare('INSERT OR REPLACE INTO rm_source_logs (source_id, pos, kind, at) VALUES (?, ?, ?, ?)');
    const trim = db.prepare(`DELETE FROM rm_source_logs WHERE source_id = ? AND pos <= (
        SELECT pos FROM rm_source_logs WHERE source_id = ? ORDER BY pos DESC LIMIT 1 OFFSET ${KEPT_PER_SOURCE})`);
    const removeAll = db.prepare('DELETE FROM rm_source_logs WHERE source_id = ?');
    const add = (sourceId: string, pos: number, kind: string, at: number, data: () => Record<string, unknown>) => {
      insert(sourceId, pos, kind, at);
      if (this.live) this.logged.push({ sourceId, pos, kind, at, data: data() });
      if (pos % TRIM_EVERY === 0) trim.run(sourceId, sourceId);
    };
    this.handlers = {
      [EventTypes.sourceRunCompleted]: (e) => {
        const d = e.data;
        add(d.sourceId, logPosition(e), 'run', recordedAt(e), () => runEntry(d));
      },
      [EventTypes.sourceHookRan]: (e) => {
        const d = e.data;
        add(d.sourceId, logPosition(e), `hook:${d.hook}`, recordedAt(e), () => hookEntry(d));
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
