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

/**
 * Decodes a cursor; `undefined` for anything that is not exactly one `encodeCursor` makes
 * (base64 decoding is lenient, so the text is re-encoded and compared).
 */
export function decodeCursor(cursor: string): number | undefined {
  const m = /^p:(\d{1,16})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!m) return undefined;
  const pos = Number(m[1]);
  return Number.isSafeInteger(pos) && encodeCursor(pos) === cursor ? pos : undefined;
}

function cursorPosition(field: 'after' | 'before', cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined;
  const pos = decodeCursor(cursor);
  // Callers validate cursors first (a 400 naming the field); a bad one must never read as "no cursor".
  if (pos === undefined) throw new RangeError(`${field} is not a valid cursor`);
  return pos;
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
  const after = cursorPosition('after', req.after);
  const before = cursorPosition('before', req.before);
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
