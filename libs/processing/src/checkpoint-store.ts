import type Database from 'better-sqlite3';

/**
 * What a processor folded inline (inside each group's own transaction, by the SQLite store) may
 * store as its checkpoint instead of a position: it is at the head of the log whatever the head
 * is (see `ProcessorRunner`). The store calls `InlineFold.unfolded` in the transaction of any
 * group that appends events without the fold, where the runner replaces this with its position.
 */
export const FOLLOWS_LOG = -1n;

/** Stores processor checkpoints in the SQLite file, so they can commit in the same transaction as read models. */
export class CheckpointStore {
  private readonly getStmt: Database.Statement;
  private readonly setStmt: Database.Statement;

  constructor(readonly db: Database.Database) {
    db.exec('CREATE TABLE IF NOT EXISTS checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL)');
    this.getStmt = db.prepare('SELECT position FROM checkpoints WHERE name = ?');
    this.setStmt = db.prepare('INSERT INTO checkpoints (name, position) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET position = excluded.position');
  }

  /**
   * The last position fully processed by `name` (0n when it never ran), or {@link FOLLOWS_LOG}
   * for a processor folded inside every commit of the log (see `ProcessorRunner`).
   */
  get(name: string): bigint {
    const row = this.getStmt.get(name) as { position: number | bigint } | undefined;
    return row ? BigInt(row.position) : 0n;
  }

  set(name: string, position: bigint): void {
    this.setStmt.run(name, position);
  }
}
