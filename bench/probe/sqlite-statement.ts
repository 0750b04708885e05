/* eslint-disable @typescript-eslint/no-require-imports */

/**
 * better-sqlite3's `Database` and the prototype of its prepared statements, for the probes that
 * wrap their methods: the `Statement` class is not exported, so it is taken from a statement of a
 * throwaway in-memory database. Patching the prototype reaches every statement the server prepares.
 */
export function sqliteClasses(): { Database: any; Statement: any } {
  const Database = require('better-sqlite3');
  const scratch = new Database(':memory:');
  const Statement = Object.getPrototypeOf(scratch.prepare('SELECT 1'));
  scratch.close();
  return { Database, Statement };
}
