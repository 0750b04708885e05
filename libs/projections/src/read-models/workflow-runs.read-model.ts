import type Database from 'better-sqlite3';
import { writeStatements, type WriteStatement } from '@app/event-store';
import { EventTypes } from '@app/domain';
import { logPosition, ReadModel, ReadModelHandlers, ReadModelTables, recordedAt, TRIM_EVERY } from './read-model';

type RunEvents = typeof EventTypes.workflowRunStarted | typeof EventTypes.workflowStepCompleted | typeof EventTypes.workflowSendPerformed
  | typeof EventTypes.workflowRunFinished | typeof EventTypes.workflowDeleted;

/** Finished runs kept per workflow for listing (every run stays in the log). */
export const KEPT_RUNS_PER_WORKFLOW = 100;

/**
 * Workflow runs as the runs API shows them: status, trigger, each step's outcome and each send's
 * outcome as JSON arrays. Runs still `running` are never trimmed: start-up resumes them from here.
 */
export class WorkflowRunsReadModel implements ReadModel<RunEvents> {
  static readonly definition: ReadModelTables = {
    tables: ['rm_workflow_runs'],
    schema: `
CREATE TABLE IF NOT EXISTS rm_workflow_runs (
  id TEXT PRIMARY KEY, workflow_id TEXT, account_id TEXT, status TEXT, workflow_version INTEGER, exit_reason TEXT, trigger TEXT,
  step_names TEXT, results TEXT, sends TEXT, skipped TEXT, started_at_ms INTEGER, finished_at_ms INTEGER, pos INTEGER);
CREATE INDEX IF NOT EXISTS rm_workflow_runs_wf ON rm_workflow_runs(workflow_id, pos);
CREATE INDEX IF NOT EXISTS rm_workflow_runs_status ON rm_workflow_runs(status, pos);`,
  };

  readonly handlers: ReadModelHandlers<RunEvents>;
  private inserts = 0;
  /**
   * The steps' and sends' JSON of the runs whose records this batch folded, parsed once and
   * written once at its end (`endBatch`): a run's step and send records usually share a commit,
   * where each used to read, parse, serialise and rewrite the row again.
   */
  private readonly open = new Map<string, { results: unknown[]; sends: SendEntry[]; resultsChanged: boolean; sendsChanged: boolean }>();
  private readonly setResults: WriteStatement;
  private readonly setSends: WriteStatement;

  constructor(db: Database.Database) {
    const writes = writeStatements(db);
    const start = writes.prepare(`INSERT OR REPLACE INTO rm_workflow_runs (id, workflow_id, account_id, status, workflow_version, exit_reason, trigger,
        step_names, results, sends, skipped, started_at_ms, finished_at_ms, pos) VALUES (?, ?, ?, 'running', ?, NULL, ?, ?, '[]', '[]', '[]', ?, NULL, ?)`);
    const get = db.prepare('SELECT results, sends FROM rm_workflow_runs WHERE id = ?');
    this.setResults = writes.prepare('UPDATE rm_workflow_runs SET results = ? WHERE id = ?');
    this.setSends = writes.prepare('UPDATE rm_workflow_runs SET sends = ? WHERE id = ?');
    const finish = writes.prepare('UPDATE rm_workflow_runs SET status = ?, exit_reason = ?, skipped = ?, finished_at_ms = ? WHERE id = ?');
    const trim = db.prepare(`DELETE FROM rm_workflow_runs WHERE workflow_id = ? AND status != 'running' AND pos < coalesce((
        SELECT pos FROM rm_workflow_runs WHERE workflow_id = ? AND status != 'running' ORDER BY pos DESC LIMIT 1 OFFSET ?), -1)`);
    const removeWorkflow = db.prepare("DELETE FROM rm_workflow_runs WHERE workflow_id = ? AND status != 'running'");
    // The run's entry for this batch, read from its row the first time (undefined: no row).
    const opened = (id: string) => {
      let entry = this.open.get(id);
      if (!entry) {
        const r = get.get(id) as { results: string; sends: string } | undefined;
        if (!r) return undefined;
        entry = { results: JSON.parse(r.results) as unknown[], sends: JSON.parse(r.sends) as SendEntry[], resultsChanged: false, sendsChanged: false };
        this.open.set(id, entry);
      }
      return entry;
    };
    this.handlers = {
      [EventTypes.workflowRunStarted]: (e) => {
        const d = e.data;
        // The row starts again (a start folded again): so does what this batch holds of it.
        this.open.delete(d.runId);
        start(d.runId, d.workflowId, d.accountId, d.workflowVersion, JSON.stringify(d.trigger), JSON.stringify(d.steps.map((s) => s.name)),
          recordedAt(e), logPosition(e));
        if (++this.inserts % TRIM_EVERY === 0) trim.run(d.workflowId, d.workflowId, KEPT_RUNS_PER_WORKFLOW);
      },
      [EventTypes.workflowStepCompleted]: (e) => {
        const entry = opened(e.data.runId);
        if (!entry) return;
        const { runId: _r, workflowId: _w, sends, ...outcome } = e.data;
        // Object.assign onto the rest object: a spread followed by a new member would give every
        // result a hidden class of its own in V8 11.
        entry.results[e.data.index] = Object.assign(outcome, { sends: sends.map((s) => s.kind) });
        entry.resultsChanged = true;
      },
      [EventTypes.workflowSendPerformed]: (e) => {
        const entry = opened(e.data.runId);
        if (!entry) return;
        const { runId: _r, workflowId: _w, ...outcome } = e.data;
        // A send is recorded once per (step, send): folded again, it replaces its entry rather than adding one.
        const at = entry.sends.findIndex((s) => s.stepIndex === outcome.stepIndex && s.sendIndex === outcome.sendIndex);
        if (at >= 0) entry.sends[at] = outcome;
        else entry.sends.push(outcome);
        entry.sendsChanged = true;
      },
      [EventTypes.workflowRunFinished]: (e) => {
        finish(e.data.status, e.data.exitReason ?? null, JSON.stringify(e.data.skipped), recordedAt(e), e.data.runId);
      },
      // Runs of a deleted workflow leave the listing (they stay in the log); unfinished ones still finish.
      [EventTypes.workflowDeleted]: (e) => removeWorkflow.run(e.data.workflowId),
    };
  }

  /** Writes what the batch changed of each run's steps and sends (call before its transaction commits). */
  endBatch(): void {
    try {
      for (const [id, entry] of this.open) {
        // A row deleted meanwhile in the batch (trimmed, its workflow deleted) is not written again: the UPDATE finds none.
        if (entry.resultsChanged) this.setResults(JSON.stringify(entry.results), id);
        if (entry.sendsChanged) this.setSends(JSON.stringify(entry.sends), id);
      }
    } finally {
      // Written or failed (the transaction then rolls back), the next batch reads the rows afresh.
      this.open.clear();
    }
  }

  /** Forgets a batch whose transaction rolled back. */
  discard(): void {
    this.open.clear();
  }
}

/** A send's outcome as `sends` lists it. */
type SendEntry = { stepIndex?: number; sendIndex?: number } & Record<string, unknown>;
