import type Database from 'better-sqlite3';
import { writeStatements } from '@app/event-store';
import { EventTypes } from '@app/domain';
import { KEPT_PER_SOURCE, logPosition, ReadModel, ReadModelHandlers, ReadModelTables, TRIM_EVERY } from './read-model';

/** An emitted event as it entered the read model, for live streams (SSE). */
export interface EmittedSummary {
  sourceId: string;
  summaryId: string;
  ms: number;
  channel: string;
  emitId: string;
  event: unknown;
  meta: Record<string, unknown>;
}

/**
 * The columns of a kept summary as the queries return them: its own, with the emit's payload
 * (`event`, `null` for none) and `meta` as JSON text read from the emit in the log (`events`,
 * by position), so `s` is `rm_source_events` and `e` the log's row at `s.pos`.
 */
export const SOURCE_EVENT_COLUMNS =
  "s.source_id, s.summary_id, s.ms, s.seq, s.channel, s.emit_id, COALESCE(e.data -> '$.event', 'null') AS event, e.data -> '$.meta' AS meta";

type SourceEventEvents = typeof EventTypes.sourceEventEmitted | typeof EventTypes.sourceEventsCleared | typeof EventTypes.sourceDeleted;

/**
 * `<ms>-<seq>` of a summary id, the order events are listed in. A part that is not a number reads
 * as 0: the key columns are NOT NULL (the table is WITHOUT ROWID), and one malformed id must not
 * stop the fold.
 */
function summaryKey(summaryId: string): [number, number] {
  // As `split('-').map(Number)` would read it (parts past the second ignored), without the arrays.
  const dash = summaryId.indexOf('-');
  const ms = Number(dash < 0 ? summaryId : summaryId.slice(0, dash));
  let seq = Number.NaN;
  if (dash >= 0) {
    const next = summaryId.indexOf('-', dash + 1);
    seq = Number(next < 0 ? summaryId.slice(dash + 1) : summaryId.slice(dash + 1, next));
  }
  return [Number.isFinite(ms) ? ms : 0, Number.isFinite(seq) ? seq : 0];
}

/**
 * The last {@link KEPT_PER_SOURCE} events each source emitted per channel (`event_summaries`),
 * minus cleared ranges. While `live`, emits are also collected for the live streams, taken once
 * the transaction committed.
 */
export class SourceEventsReadModel implements ReadModel<SourceEventEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_source_events'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_source_events (
  source_id TEXT, summary_id TEXT, ms INTEGER, seq INTEGER, channel TEXT, emit_id TEXT, pos INTEGER,
  PRIMARY KEY (source_id, channel, ms, seq)) WITHOUT ROWID;`,
  };

  /** Collect emits for live streams (off while rebuilding, when nobody listens). */
  live = false;
  readonly handlers: ReadModelHandlers<SourceEventEvents>;
  private emitted: EmittedSummary[] = [];

  constructor(db: Database.Database) {
    // The emit's payload and meta stay in the log, at `pos`: the queries read them from there
    // (SOURCE_EVENT_COLUMNS), where a copy here wrote each byte of a payload once more.
    const insert = writeStatements(db).prepare(`INSERT OR REPLACE INTO rm_source_events (source_id, summary_id, ms, seq, channel, emit_id, pos)
      VALUES (?, ?, ?, ?, ?, ?, ?)`);
    // Everything older than the channel's KEPT_PER_SOURCE-th newest (none when it has fewer): one
    // range delete on the primary key, where a NOT IN list cost a temporary index per trim.
    const trim = db.prepare(`DELETE FROM rm_source_events WHERE source_id = ? AND channel = ? AND (ms, seq) < (
        SELECT ms, seq FROM rm_source_events WHERE source_id = ? AND channel = ? ORDER BY ms DESC, seq DESC LIMIT 1 OFFSET ${KEPT_PER_SOURCE - 1})`);
    const removeAll = db.prepare('DELETE FROM rm_source_events WHERE source_id = ?');
    const removeRange = db.prepare(
      'DELETE FROM rm_source_events WHERE source_id = ? AND (ms > ? OR (ms = ? AND seq >= ?)) AND (ms < ? OR (ms = ? AND seq <= ?))');
    this.handlers = {
      [EventTypes.sourceEventEmitted]: (e) => {
        const d = e.data;
        const [ms, seq] = summaryKey(String(d.summaryId));
        const channel = d.meta.name ?? '';
        insert(d.sourceId, d.summaryId, ms, seq, channel, d.emitId, logPosition(e));
        if (this.live) this.emitted.push({ sourceId: d.sourceId, summaryId: d.summaryId, ms, channel, emitId: d.emitId, event: d.event ?? null, meta: d.meta });
        // Trimmed every TRIM_EVERY emits (queries cap at KEPT_PER_SOURCE), not on every insert.
        if (seq % TRIM_EVERY === 0) trim.run(d.sourceId, channel, d.sourceId, channel);
      },
      [EventTypes.sourceEventsCleared]: (e) => {
        const { sourceId, startId, endId } = e.data;
        if (!startId && !endId) {
          removeAll.run(sourceId);
          return;
        }
        const [sm, ss] = startId ? summaryKey(startId) : [0, 0];
        const [em, es] = endId ? summaryKey(endId) : [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER];
        removeRange.run(sourceId, sm, sm, ss, em, em, es);
      },
      [EventTypes.sourceDeleted]: (e) => removeAll.run(e.data.sourceId),
    };
  }

  /** Emits folded since the last call (call after the transaction committed). */
  takeEmitted(): EmittedSummary[] {
    const out = this.emitted;
    this.emitted = [];
    return out;
  }

  /** Forgets the emits of a batch whose transaction rolled back. */
  discard(): void {
    this.emitted = [];
  }
}
