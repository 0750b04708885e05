import type Database from 'better-sqlite3';
import { loadNativeLibrary, nativeLibraryFile } from '@app/native';

/** A write statement (no rows returned): runs with its parameters and returns the rows it changed. */
export type WriteStatement = (...params: unknown[]) => number;

/** The write statements of one connection. */
export interface WriteStatements {
  /** True when they run through `lean-statements` (see {@link writeStatements}), false through better-sqlite3's `run()`. */
  readonly lean: boolean;
  /** Why not, when they do not. */
  readonly reason?: string;
  /** Prepares `sql` (one statement returning no rows) on the connection. */
  prepare(sql: string): WriteStatement;
}

interface LeanStatements {
  claim(): unknown;
  prepare(conn: unknown, sql: string): WriteStatement;
  release(conn: unknown): void;
}

const LIBRARY = 'lean-statements.node';
const ENTRY_POINT = 'sqlite3_leanstatements_init';
let library: { lib: LeanStatements; file: string } | { reason: string } | undefined;
const ofConnection = new WeakMap<Database.Database, WriteStatements>();
let warnedOfConnection = false;

function leanLibrary(): { lib: LeanStatements; file: string } | { reason: string } {
  if (library) return library;
  const setting = process.env.SLUICE_SQLITE_LEAN_STATEMENTS ?? '';
  if (setting !== '' && setting !== 'on' && setting !== 'off') {
    throw new RangeError(`SLUICE_SQLITE_LEAN_STATEMENTS must be "on" or "off", got "${setting}"`);
  }
  if (setting === 'off') return (library = { reason: 'SLUICE_SQLITE_LEAN_STATEMENTS=off' });
  const lib = loadNativeLibrary<LeanStatements>(LIBRARY, 'event store: its writes run through better-sqlite3 alone');
  const file = nativeLibraryFile(LIBRARY);
  library = file && lib ? { lib, file } : { reason: `${LIBRARY} is not built or did not load (npm run build compiles it)` };
  return library;
}

/**
 * The write statements of `db` (one object per connection). The event store's hot writes (the
 * log's INSERTs, the read models' per-event rows) run many times per event, and better-sqlite3's
 * `run()` costs something of its own on each: it builds a `{ changes, lastInsertRowid }` object
 * with two generic property stores and converts each string parameter to UTF-8 twice before
 * SQLite copies it again. Where `dist/native/lean-statements.node` is built
 * (`libs/event-store/native/lean-statements.c`), it is loaded into the connection as an SQLite
 * extension and prepares the statements itself, on the same connection and in the same
 * transactions, binding as better-sqlite3 binds and throwing SQLite's errors with the same `code`s;
 * `db.close()` then finalizes them first. Without it, or with
 * `SLUICE_SQLITE_LEAN_STATEMENTS=off`, each statement is better-sqlite3's `run()` returning
 * `changes`. Any other value than `on`, `off` or nothing is refused (a RangeError naming it).
 */
export function writeStatements(db: Database.Database): WriteStatements {
  const known = ofConnection.get(db);
  if (known) return known;
  const loaded = leanLibrary();
  let made: WriteStatements | undefined;
  if ('lib' in loaded) {
    try {
      // better-sqlite3 takes the entry point as a second argument; its types omit it.
      (db as unknown as { loadExtension(path: string, entryPoint: string): void }).loadExtension(loaded.file, ENTRY_POINT);
      const conn = loaded.lib.claim();
      const close = db.close;
      // SQLite does not close a connection whose statements are not finalized: ours go first.
      Object.defineProperty(db, 'close', {
        value(this: Database.Database) {
          loaded.lib.release(conn);
          return close.call(this);
        },
        configurable: true,
        writable: true,
      });
      made = { lean: true, prepare: (sql) => loaded.lib.prepare(conn, sql) };
    } catch (error) {
      made = throughBetterSqlite(db, `the extension did not load into the connection: ${(error as Error).message}`);
      if (!warnedOfConnection) console.error(`event store: its writes run through better-sqlite3 alone (${made.reason})`);
      warnedOfConnection = true;
    }
  } else {
    made = throughBetterSqlite(db, loaded.reason);
  }
  ofConnection.set(db, made);
  return made;
}

function throughBetterSqlite(db: Database.Database, reason: string): WriteStatements {
  return {
    lean: false,
    reason,
    prepare(sql) {
      const statement = db.prepare(sql);
      return (...params: unknown[]) => statement.run(...params).changes;
    },
  };
}
