/** Instructions (callgrind's `Ir`) by object file, and in all, from one callgrind output file. */
export interface InstructionCounts {
  total: number;
  byObject: Map<string, number>;
}

/**
 * Reads a callgrind output file (format of valgrind's callgrind, with name compression) and sums
 * each function's own cost by the object it belongs to. The cost line after a `calls=` line is the
 * call's inclusive cost and is not added (it is counted where it was spent).
 */
export function parseCallgrind(text: string): InstructionCounts {
  const names = new Map<string, string>();
  const byObject = new Map<string, number>();
  let object = '???';
  let positions = 1;
  let irColumn = 0;
  let skipNext = false;
  let total = 0;
  const nameOf = (spec: string): string => {
    const m = /^\((\d+)\)(?:\s+(.*))?$/.exec(spec.trim());
    if (!m) return spec.trim();
    if (m[2] !== undefined) names.set(m[1], m[2]);
    return names.get(m[1]) ?? spec.trim();
  };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const c = line.charCodeAt(0);
    const isCost = (c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42; // digit + - *
    if (isCost) {
      if (skipNext) {
        skipNext = false;
        continue;
      }
      const fields = line.split(' ');
      const ir = Number(fields[positions + irColumn] ?? 0);
      if (ir) byObject.set(object, (byObject.get(object) ?? 0) + ir);
      continue;
    }
    if (line.startsWith('ob=')) object = nameOf(line.slice(3));
    else if (line.startsWith('calls=')) skipNext = true;
    else if (line.startsWith('positions:')) positions = line.slice(10).trim().split(/\s+/).length;
    else if (line.startsWith('events:')) irColumn = Math.max(0, line.slice(7).trim().split(/\s+/).indexOf('Ir'));
    else if (line.startsWith('summary:') || line.startsWith('totals:')) total = Number(line.split(/\s+/)[1 + irColumn]);
    else if (line.startsWith('cob=')) nameOf(line.slice(4)); // defines a compressed name only
  }
  if (!total) total = [...byObject.values()].reduce((a, b) => a + b, 0);
  return { total, byObject };
}
