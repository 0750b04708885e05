/** One column of a table: its heading and how to read the cell from a row. */
export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

/** A cell as text: nothing for null/undefined, JSON for objects, one line always. */
export function cellText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v.replace(/\s*\n\s*/g, ' ');
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/**
 * An aligned text table (upper-case headings, two spaces between columns, no trailing spaces);
 * with no rows, the `empty` line instead so that a user is not left with a bare heading.
 */
export function table<T>(rows: T[], columns: Column<T>[], empty = '(none)'): string {
  if (rows.length === 0) return empty;
  const cells = rows.map((r) => columns.map((c) => cellText(c.value(r))));
  const headers = columns.map((c) => c.header.toUpperCase());
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i].length)));
  const line = (row: string[]) => row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(headers), ...cells.map(line)].join('\n');
}

/** `key: value` lines, keys aligned; objects shown as JSON on their line. */
export function details(fields: [string, unknown][]): string {
  const width = Math.max(...fields.map(([k]) => k.length));
  return fields.filter(([, v]) => v !== undefined).map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${cellText(v)}`.trimEnd()).join('\n');
}

/** Epoch seconds or milliseconds as an ISO time without milliseconds (UTC). */
export function time(v: unknown): string {
  if (typeof v !== 'number') return '';
  const ms = v < 1e12 ? v * 1000 : v;
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Writes a JSON value for scripts: pretty, one trailing newline. */
export function printJson(v: unknown): void {
  process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
}

/** Writes text for people, with one trailing newline. */
export function printText(text: string): void {
  process.stdout.write(`${text}\n`);
}
