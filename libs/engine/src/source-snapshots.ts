import type Database from 'better-sqlite3';

/** A source's snapshot as stored: the state's JSON, the revision it covers and the id of the event at that revision. */
export interface StoredSourceSnapshot {
  revision: bigint;
  eventId: string;
  state: string;
}

/** Where source actors keep their snapshots (see {@link SqliteSourceSnapshots}). */
export interface SourceSnapshots {
  get(sourceId: string): StoredSourceSnapshot | undefined;
  /** Replaces the source's snapshot; false when it could not be written now (nothing is lost: the log has it all). */
  put(sourceId: string, snapshot: StoredSourceSnapshot): boolean;
  delete(sourceId: string): void;
  deleteAll(): void;
}

/**
 * Source snapshots in a table of the engine's SQLite file, one row per source, written in their
 * own small transactions after the events they cover are committed. A row is derived data:
 * losing it (or finding it does not match the log) costs a fold from the first event, nothing
 * else. WAL commits survive in order, so a snapshot never outlives the events it covers.
 */
export class SqliteSourceSnapshots implements SourceSnapshots {
  private readonly getStmt: Database.Statement<[string], { revision: number | bigint; event_id: string; state: string }>;
  private readonly putStmt: Database.Statement<[string, bigint, string, string]>;
  private readonly deleteStmt: Database.Statement<[string]>;
  private readonly deleteAllStmt: Database.Statement<[]>;

  constructor(private readonly db: Database.Database) {
    db.exec('CREATE TABLE IF NOT EXISTS source_snapshots (source_id TEXT PRIMARY KEY, revision INTEGER NOT NULL, event_id TEXT NOT NULL, state TEXT NOT NULL)');
    this.getStmt = db.prepare('SELECT revision, event_id, state FROM source_snapshots WHERE source_id = ?');
    this.putStmt = db.prepare(
      'INSERT INTO source_snapshots (source_id, revision, event_id, state) VALUES (?, ?, ?, ?) '
      + 'ON CONFLICT(source_id) DO UPDATE SET revision = excluded.revision, event_id = excluded.event_id, state = excluded.state',
    );
    this.deleteStmt = db.prepare('DELETE FROM source_snapshots WHERE source_id = ?');
    this.deleteAllStmt = db.prepare('DELETE FROM source_snapshots');
  }

  get(sourceId: string): StoredSourceSnapshot | undefined {
    const row = this.getStmt.get(sourceId);
    return row ? { revision: BigInt(row.revision), eventId: row.event_id, state: row.state } : undefined;
  }

  put(sourceId: string, s: StoredSourceSnapshot): boolean {
    // Inside another's transaction (a read model's, held across an await) the row would share its
    // fate, and the event writer waits for it: skip, a later turn writes one.
    if (this.db.inTransaction) return false;
    this.putStmt.run(sourceId, s.revision, s.eventId, s.state);
    return true;
  }

  delete(sourceId: string): void {
    if (!this.db.inTransaction) this.deleteStmt.run(sourceId);
  }

  deleteAll(): void {
    this.deleteAllStmt.run();
  }
}
