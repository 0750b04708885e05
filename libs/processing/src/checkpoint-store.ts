import type Database from 'better-sqlite3';

/** Stores processor checkpoints in the SQLite file, so they can commit in the same transaction as read models. */
export class CheckpointStore {
  private readonly getStmt: Database.Statement;
  private readonly setStmt: Database.Statement;

  constructor(readonly db: Database.Database) {
    db.exec('CREATE TABLE IF NOT EXISTS checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL)');
    this.getStmt = db.prepare('SELECT position FROM checkpoints WHERE name = ?');
    this.setStmt = db.prepare('INSERT INTO checkpoints (name, position) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET position = excluded.position');
  }

  /** The last position fully processed by `name` (0n when it never ran). */
  get(name: string): bigint {
    const row = this.getStmt.get(name) as { position: number | bigint } | undefined;
    return row ? BigInt(row.position) : 0n;
  }

  set(name: string, position: bigint): void {
    this.relaxed(() => this.setStmt.run(name, position));
  }

  /**
   * Runs `fn` with `synchronous = NORMAL`: read models and checkpoints can always be rebuilt from
   * the log, so their commits need no fsync of their own. In WAL mode the next log commit (FULL)
   * syncs every frame written before it, so they still reach the disk in log order.
   */
  relaxed<T>(fn: () => T): T {
    if (this.logSync === undefined) this.logSync = String(this.db.pragma('synchronous', { simple: true }));
    if (this.logSync === '1' || this.db.inTransaction) return fn();
    this.db.pragma('synchronous = NORMAL');
    try {
      return fn();
    } finally {
      this.db.pragma(`synchronous = ${this.logSync}`);
    }
  }

  private logSync?: string;
}
