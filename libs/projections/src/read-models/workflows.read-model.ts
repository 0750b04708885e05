import type Database from 'better-sqlite3';
import { EventTypes } from '@app/domain';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables, recordedAt, recordedSec } from './read-model';

type WorkflowEvents = typeof EventTypes.workflowCreated | typeof EventTypes.workflowUpdated | typeof EventTypes.workflowDeleted
  | typeof EventTypes.workflowRunStarted;

/**
 * Workflows (`p_`): the current definition as JSON, the columns looked up by (slug, endpoint key,
 * trigger type), and when a timer last started a run (the timer's phase after a restart).
 */
export class WorkflowsReadModel implements ReadModel<WorkflowEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_workflows'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_workflows (
  id TEXT PRIMARY KEY, account_id TEXT, name TEXT, name_slug TEXT, active INTEGER, version INTEGER, config TEXT,
  trigger_type TEXT, endpoint_key TEXT, created_at INTEGER, updated_at INTEGER, pos INTEGER, last_timer_at INTEGER);
CREATE INDEX IF NOT EXISTS rm_workflows_account ON rm_workflows(account_id, pos);
CREATE INDEX IF NOT EXISTS rm_workflows_endpoint ON rm_workflows(endpoint_key);
CREATE INDEX IF NOT EXISTS rm_workflows_slug ON rm_workflows(account_id, name_slug);`,
  };

  readonly handlers: ReadModelHandlers<WorkflowEvents>;

  constructor(db: Database.Database) {
    const create = db.prepare(`INSERT OR REPLACE INTO rm_workflows (id, account_id, name, name_slug, active, version, config, trigger_type,
        endpoint_key, created_at, updated_at, pos) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    const update = db.prepare(`UPDATE rm_workflows SET name = ?, name_slug = ?, active = ?, version = ?, config = ?, trigger_type = ?,
        endpoint_key = ?, updated_at = ? WHERE id = ?`);
    const remove = db.prepare('DELETE FROM rm_workflows WHERE id = ?');
    const timerFired = db.prepare('UPDATE rm_workflows SET last_timer_at = ? WHERE id = ?');
    this.handlers = {
      [EventTypes.workflowCreated]: (e) => {
        const { config: c } = e.data;
        const sec = recordedSec(e);
        create.run(e.data.workflowId, e.data.accountId, c.name, c.nameSlug, c.active ? 1 : 0, e.data.version, JSON.stringify(c), c.trigger.type,
          c.endpointKey ?? null, sec, sec, logPosition(e));
      },
      [EventTypes.workflowUpdated]: (e) => {
        const { config: c } = e.data;
        update.run(c.name, c.nameSlug, c.active ? 1 : 0, e.data.version, JSON.stringify(c), c.trigger.type, c.endpointKey ?? null,
          recordedSec(e), e.data.workflowId);
      },
      [EventTypes.workflowDeleted]: (e) => remove.run(e.data.workflowId),
      [EventTypes.workflowRunStarted]: (e) => {
        if (e.data.trigger.context.trigger === 'timer') timerFired.run(recordedAt(e), e.data.workflowId);
      },
    };
  }
}
