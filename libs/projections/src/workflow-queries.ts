import type Database from 'better-sqlite3';
import { Page, PageRequest, pageQuery } from './page';

export interface WorkflowRow {
  id: string; account_id: string; name: string; name_slug: string; active: number; version: number; config: string;
  trigger_type: string; endpoint_key: string | null; created_at: number; updated_at: number; pos: number; last_timer_at: number | null;
}
export interface WorkflowRunRow {
  id: string; workflow_id: string; account_id: string; status: string; workflow_version: number; exit_reason: string | null;
  trigger: string; step_names: string; results: string; sends: string; skipped: string; started_at_ms: number;
  finished_at_ms: number | null; pos: number;
}

/** Read-only queries over the workflows and workflow-runs read models. */
export class WorkflowQueries {
  private readonly s: Record<string, Database.Statement>;

  constructor(private readonly db: Database.Database) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      byId: p('SELECT * FROM rm_workflows WHERE id = ?'),
      bySlug: p('SELECT * FROM rm_workflows WHERE account_id = ? AND name_slug = ?'),
      byEndpoint: p('SELECT * FROM rm_workflows WHERE endpoint_key = ?'),
      byTrigger: p('SELECT * FROM rm_workflows WHERE trigger_type = ?'),
      run: p('SELECT * FROM rm_workflow_runs WHERE id = ?'),
      stepDb: p('SELECT key, value FROM rm_workflow_step_db WHERE workflow_id = ? AND step_name = ?'),
      unfinished: p("SELECT * FROM rm_workflow_runs WHERE status = 'running' ORDER BY pos"),
    };
  }

  workflow(id: string): WorkflowRow | undefined {
    return this.s.byId.get(id) as WorkflowRow | undefined;
  }
  workflowBySlug(accountId: string, slug: string): WorkflowRow | undefined {
    return this.s.bySlug.get(accountId, slug) as WorkflowRow | undefined;
  }
  workflowByEndpoint(key: string): WorkflowRow | undefined {
    return this.s.byEndpoint.get(key) as WorkflowRow | undefined;
  }
  workflowsWithTrigger(type: string): WorkflowRow[] {
    return this.s.byTrigger.all(type) as WorkflowRow[];
  }
  workflows(accountId: string, req: PageRequest): Page<WorkflowRow> {
    return pageQuery<WorkflowRow>(this.db, 'rm_workflows', 'account_id = ?', [accountId], req);
  }
  run(runId: string): WorkflowRunRow | undefined {
    return this.s.run.get(runId) as WorkflowRunRow | undefined;
  }
  /** Runs of a workflow, newest first. */
  runs(workflowId: string, req: PageRequest): Page<WorkflowRunRow> {
    return pageQuery<WorkflowRunRow>(this.db, 'rm_workflow_runs', 'workflow_id = ?', [workflowId], req);
  }
  /** The `$.service.db` values of one workflow step. */
  stepDb(workflowId: string, stepName: string): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const r of this.s.stepDb.all(workflowId, stepName) as { key: string; value: string }[]) out[r.key] = JSON.parse(r.value);
    return out;
  }
  /** Runs without an end, oldest first (start-up resumes them in trigger order). */
  unfinishedRuns(): WorkflowRunRow[] {
    return this.s.unfinished.all() as WorkflowRunRow[];
  }
}
