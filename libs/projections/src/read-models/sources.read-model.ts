import type Database from 'better-sqlite3';
import { EventTypes } from '@app/domain';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables, recordedAt, recordedSec } from './read-model';

type SourceEvents =
  | typeof EventTypes.sourceDeployRequested | typeof EventTypes.sourceDeployed | typeof EventTypes.sourceDeployFailed
  | typeof EventTypes.sourceUpdateRequested | typeof EventTypes.sourceUpdated | typeof EventTypes.sourceUpdateFailed
  | typeof EventTypes.sourceDeleteRequested | typeof EventTypes.sourceDeleted | typeof EventTypes.sourceDeleteFailed
  | typeof EventTypes.sourceRunCompleted;

/**
 * Deployed sources: config, lifecycle status (with the saga's transient states, which start-up
 * resumes from), and the last run's outcome (`failing`, `last_error`).
 */
export class SourcesReadModel implements ReadModel<SourceEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_sources'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_sources (
  id TEXT PRIMARY KEY, account_id TEXT, component_id TEXT, name TEXT, name_slug TEXT, configured_props TEXT,
  active INTEGER, endpoint_key TEXT, status TEXT, created_at INTEGER, updated_at INTEGER, pos INTEGER,
  last_activated_at INTEGER, last_timer_at INTEGER, failing INTEGER DEFAULT 0, last_error TEXT);
CREATE INDEX IF NOT EXISTS rm_sources_account ON rm_sources(account_id, pos);
CREATE INDEX IF NOT EXISTS rm_sources_endpoint ON rm_sources(endpoint_key);
CREATE INDEX IF NOT EXISTS rm_sources_slug ON rm_sources(account_id, name_slug);`,
  };

  readonly handlers: ReadModelHandlers<SourceEvents>;
  /**
   * Sources whose row is known to say "not failing, no error" (written so by this instance), so a
   * good run after a good run writes nothing. Only ever holds what the row says: an id leaves it
   * when its row is written otherwise or goes, and it is emptied when a transaction rolls back.
   */
  private readonly knownGood = new Set<string>();

  constructor(db: Database.Database) {
    const create = db.prepare(`INSERT OR REPLACE INTO rm_sources (id, account_id, component_id, name, name_slug, configured_props, active,
        endpoint_key, status, created_at, updated_at, pos) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'deploying', ?, ?, ?)`);
    const status = db.prepare('UPDATE rm_sources SET status = ?, updated_at = ? WHERE id = ?');
    const activated = db.prepare('UPDATE rm_sources SET last_activated_at = ? WHERE id = ?');
    const timerFired = db.prepare('UPDATE rm_sources SET last_timer_at = ? WHERE id = ?');
    const runOutcome = db.prepare('UPDATE rm_sources SET failing = ?, last_error = ? WHERE id = ?');
    const update = db.prepare(`UPDATE rm_sources SET component_id = ?, name = ?, name_slug = ?, configured_props = ?, active = ?, endpoint_key = ?,
        status = 'deployed', updated_at = ? WHERE id = ?`);
    const removeRow = db.prepare('DELETE FROM rm_sources WHERE id = ?');
    const remove = { run: (id: string) => (this.knownGood.delete(id), removeRow.run(id)) };
    const backToDeployed = (e: { data: { sourceId: string }; metadata: { at: number } }) => status.run('deployed', recordedSec(e), e.data.sourceId);
    this.handlers = {
      [EventTypes.sourceDeployRequested]: (e) => {
        const d = e.data;
        const sec = recordedSec(e);
        create.run(d.sourceId, d.accountId, d.componentId, d.name, d.nameSlug, JSON.stringify(d.configuredProps), d.active ? 1 : 0,
          d.endpointKey ?? null, sec, sec, logPosition(e));
      },
      [EventTypes.sourceDeployed]: (e) => {
        status.run('deployed', recordedSec(e), e.data.sourceId);
        activated.run(recordedAt(e), e.data.sourceId);
      },
      // A failed deploy leaves nothing deployed: the row goes, the audit trail stays in the log.
      [EventTypes.sourceDeployFailed]: (e) => remove.run(e.data.sourceId),
      [EventTypes.sourceUpdateRequested]: (e) => status.run('updating', recordedSec(e), e.data.sourceId),
      [EventTypes.sourceUpdated]: (e) => {
        const d = e.data;
        update.run(d.componentId, d.name, d.nameSlug, JSON.stringify(d.configuredProps), d.active ? 1 : 0, d.endpointKey ?? null,
          recordedSec(e), d.sourceId);
        activated.run(recordedAt(e), d.sourceId);
      },
      [EventTypes.sourceUpdateFailed]: backToDeployed,
      [EventTypes.sourceDeleteFailed]: backToDeployed,
      [EventTypes.sourceDeleteRequested]: (e) => status.run('deleting', recordedSec(e), e.data.sourceId),
      [EventTypes.sourceDeleted]: (e) => remove.run(e.data.sourceId),
      [EventTypes.sourceRunCompleted]: (e) => {
        const d = e.data;
        const at = recordedAt(e);
        if (d.trigger === 'timer') timerFired.run(at, d.sourceId);
        // The last run's outcome: a failed run (a crash included) marks the source failing, a good one clears it.
        if (d.ok && this.knownGood.has(d.sourceId)) return;
        runOutcome.run(d.ok ? 0 : 1, d.ok ? null : JSON.stringify({ ...d.error, at }), d.sourceId);
        if (d.ok) {
          if (this.knownGood.size >= KNOWN_GOOD_MAX) this.knownGood.clear();
          this.knownGood.add(d.sourceId);
        } else {
          this.knownGood.delete(d.sourceId);
        }
      },
    };
  }

  /** Forgets what rows said once a transaction rolled back (its writes are undone). */
  discard(): void {
    this.knownGood.clear();
  }
}

/** Bound of {@link SourcesReadModel}'s memory of good sources (emptied when reached). */
const KNOWN_GOOD_MAX = 100_000;
