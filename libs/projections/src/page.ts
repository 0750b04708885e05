import type Database from 'better-sqlite3';

/** Paging parameters of a list request (API.md: limit 1..100, default 10; opaque cursors). */
export interface PageRequest {
  limit: number;
  after?: string;
  before?: string;
}

/** A page of rows with the compat `page_info`. */
export interface Page<T> {
  rows: T[];
  pageInfo: { total_count: number; count: number; start_cursor: string | null; end_cursor: string | null };
}

/** Encodes a row position as an opaque cursor. */
export function encodeCursor(pos: number): string {
  return Buffer.from(`p:${pos}`).toString('base64url');
}

/** Decodes a cursor; `undefined` for anything that is not one of ours. */
export function decodeCursor(cursor: string): number | undefined {
  const m = /^p:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  return m ? Number(m[1]) : undefined;
}

/**
 * Keyset pagination over a table with a unique `pos` column, newest first. `after` continues
 * past the given cursor (older rows), `before` returns the rows just before it (newer rows).
 */
export function pageQuery<T extends { pos: number }>(
  db: Database.Database,
  table: string,
  where: string,
  params: unknown[],
  req: PageRequest,
): Page<T> {
  const total = (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${where}`).get(...params) as { n: number }).n;
  let rows: T[];
  const after = req.after !== undefined ? decodeCursor(req.after) : undefined;
  const before = req.before !== undefined ? decodeCursor(req.before) : undefined;
  if (before !== undefined) {
    rows = (db.prepare(`SELECT * FROM ${table} WHERE ${where} AND pos > ? ORDER BY pos ASC LIMIT ?`).all(...params, before, req.limit) as T[]).reverse();
  } else {
    rows = db
      .prepare(`SELECT * FROM ${table} WHERE ${where}${after !== undefined ? ' AND pos < ?' : ''} ORDER BY pos DESC LIMIT ?`)
      .all(...params, ...(after !== undefined ? [after] : []), req.limit) as T[];
  }
  return {
    rows,
    pageInfo: {
      total_count: total,
      count: rows.length,
      start_cursor: rows.length ? encodeCursor(rows[0].pos) : null,
      end_cursor: rows.length ? encodeCursor(rows[rows.length - 1].pos) : null,
    },
  };
}
