/** Bytes one db entry counts for: its key and its value as JSON, UTF-8 (what the guest measures too). */
export function dbEntryBytes(key: string, value: unknown): number {
  return Buffer.byteLength(key, 'utf8') + Buffer.byteLength(JSON.stringify(value ?? null) ?? 'null', 'utf8');
}

/** The db writes of one run that fit a source's db cap, and why the first one that did not was refused. */
export interface DbQuotaDecision {
  accepted: { key: string; value: unknown }[];
  /** Set when a write was refused; it and every later write are dropped. */
  refused?: string;
}

/**
 * Applies a run's db writes in order to the source's current entry sizes and keeps them up to the
 * first one that would grow the db past `maxBytes`. A write that does not grow its entry is always
 * kept, so a source over the cap (after the cap was lowered) can still shrink its db.
 */
export function fitDbWrites(
  sizes: ReadonlyMap<string, number>,
  total: number,
  writes: { key: string; value: unknown }[],
  maxBytes: number,
): DbQuotaDecision {
  const pending = new Map<string, number>();
  let running = total;
  for (let i = 0; i < writes.length; i++) {
    const { key, value } = writes[i];
    const before = pending.get(key) ?? sizes.get(key) ?? 0;
    const after = dbEntryBytes(key, value);
    const next = running - before + after;
    if (after > before && next > maxBytes) {
      return {
        accepted: writes.slice(0, i),
        refused: `db.set(${JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}...` : key)}): the source's db would hold ${next} bytes, more than the ${maxBytes} bytes allowed per source (SLUICE_MAX_DB_BYTES_PER_SOURCE=${maxBytes})`,
      };
    }
    pending.set(key, after);
    running = next;
  }
  return { accepted: writes };
}
