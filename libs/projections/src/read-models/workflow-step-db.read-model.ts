import type Database from 'better-sqlite3';
import { writeStatements } from '@app/event-store';
import { EventTypes } from '@app/domain';
import type { ReadModel, ReadModelHandlers, ReadModelTables } from './read-model';

type StepDbEvents = typeof EventTypes.workflowStepCompleted | typeof EventTypes.workflowDeleted;

/**
 * The `$.service.db` of each workflow step (a store per workflow and step name), folded from the
 * `dbWrites` its runs recorded in `workflow.step_completed`. A step's next run reads it here, so
 * the store survives restarts and is rebuilt with the other read models.
 */
export class WorkflowStepDbReadModel implements ReadModel<StepDbEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_workflow_step_db'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_workflow_step_db (
  workflow_id TEXT, step_name TEXT, key TEXT, value TEXT, PRIMARY KEY (workflow_id, step_name, key));`,
  };

  readonly handlers: ReadModelHandlers<StepDbEvents>;

  constructor(db: Database.Database) {
    const set = writeStatements(db).prepare('INSERT OR REPLACE INTO rm_workflow_step_db (workflow_id, step_name, key, value) VALUES (?, ?, ?, ?)');
    const remove = db.prepare('DELETE FROM rm_workflow_step_db WHERE workflow_id = ?');
    this.handlers = {
      [EventTypes.workflowStepCompleted]: (e) => {
        for (const w of e.data.dbWrites ?? []) set(e.data.workflowId, e.data.name, w.key, JSON.stringify(w.value ?? null));
      },
      [EventTypes.workflowDeleted]: (e) => remove.run(e.data.workflowId),
    };
  }
}
