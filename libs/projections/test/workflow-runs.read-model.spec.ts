import { EventTypes, WorkflowRunStarted } from '@app/domain';
import { KEPT_RUNS_PER_WORKFLOW, WorkflowRunsReadModel } from '../src/read-models/workflow-runs.read-model';
import { WorkflowsReadModel } from '../src/read-models/workflows.read-model';
import { databaseWith, fold, rows, T0, TestLog } from './read-model-harness';

const started = (runId: string): WorkflowRunStarted => ({
  runId, workflowId: 'p_1', accountId: 'u_1', workflowVersion: 1, customResponse: false,
  steps: [{ name: 'one', componentId: 'sc_1', configuredProps: {} }, { name: 'two', componentId: 'sc_2', configuredProps: {} }],
  trigger: { event: { a: 1 }, context: { emitter_id: 'p_1', emit_id: 'e', ts: 1, trigger: 'timer' } },
});

describe('WorkflowRunsReadModel', () => {
  const setup = () => {
    const db = databaseWith(WorkflowRunsReadModel.definition, WorkflowsReadModel.definition);
    return { db, log: new TestLog(), model: new WorkflowRunsReadModel(db) };
  };

  it('given a run started, a step recorded with a send and the run exited, then the row shows each step, send and the end', () => {
    const { db, log, model } = setup();
    fold(db, model, [
      log.event(EventTypes.workflowRunStarted, started('run_1')),
      log.event(EventTypes.workflowStepCompleted, {
        runId: 'run_1', workflowId: 'p_1', index: 0, name: 'one', status: 'succeeded', ret: 1, exports: { x: 2 }, logs: [], durationMs: 4,
        sends: [{ kind: 'emit', params: { raw_event: 1 } }], flowExit: { reason: 'done' },
      }),
      log.event(EventTypes.workflowSendPerformed, { runId: 'run_1', workflowId: 'p_1', stepIndex: 0, sendIndex: 0, kind: 'emit', ok: true, detail: { emit_id: 'm' } }),
      log.event(EventTypes.workflowRunFinished, { runId: 'run_1', workflowId: 'p_1', accountId: 'u_1', status: 'exited', exitReason: 'done', skipped: ['two'] }),
    ]);
    const [row] = rows<Record<string, string | number>>(db, 'SELECT * FROM rm_workflow_runs');
    expect(row).toMatchObject({ id: 'run_1', status: 'exited', exit_reason: 'done', started_at_ms: T0 + 1000, finished_at_ms: T0 + 4000, skipped: '["two"]' });
    expect(JSON.parse(row.results as string)[0]).toMatchObject({ name: 'one', ret: 1, exports: { x: 2 }, sends: ['emit'], flowExit: { reason: 'done' } });
    expect(JSON.parse(row.sends as string)).toEqual([{ stepIndex: 0, sendIndex: 0, kind: 'emit', ok: true, detail: { emit_id: 'm' } }]);
  });

  it('lists each send once when its event is folded again, in the order the sends were made', () => {
    const { db, log, model } = setup();
    const send = (stepIndex: number, sendIndex: number) =>
      log.event(EventTypes.workflowSendPerformed, { runId: 'run_1', workflowId: 'p_1', stepIndex, sendIndex, kind: 'emit', ok: true, detail: { emit_id: `m${stepIndex}${sendIndex}` } });
    const first = send(0, 0);
    const second = send(0, 1);
    fold(db, model, [log.event(EventTypes.workflowRunStarted, started('run_1')), first, second]);
    const sends = () => JSON.parse(rows<{ sends: string }>(db, 'SELECT sends FROM rm_workflow_runs')[0].sends) as { stepIndex: number; sendIndex: number }[];
    const once = sends();
    fold(db, model, [first]);
    fold(db, model, [second]);
    expect(sends()).toEqual(once);
    expect(once.map((x) => `${x.stepIndex}:${x.sendIndex}`)).toEqual(['0:0', '0:1']);
    fold(db, model, [send(1, 0)]);
    expect(sends().map((x) => `${x.stepIndex}:${x.sendIndex}`)).toEqual(['0:0', '0:1', '1:0']);
  });

  it('writes a run\'s steps and sends once per batch, however many of its records the batch folds', () => {
    const { db, log, model } = setup();
    db.exec(`CREATE TEMP TABLE writes (col TEXT);
      CREATE TEMP TRIGGER results_written AFTER UPDATE OF results ON rm_workflow_runs BEGIN INSERT INTO writes VALUES ('results'); END;
      CREATE TEMP TRIGGER sends_written AFTER UPDATE OF sends ON rm_workflow_runs BEGIN INSERT INTO writes VALUES ('sends'); END;`);
    const step = (index: number, name: string) => log.event(EventTypes.workflowStepCompleted, {
      runId: 'run_1', workflowId: 'p_1', index, name, status: 'succeeded', ret: index, exports: {}, logs: [], durationMs: 1,
      sends: [{ kind: 'emit', params: { raw_event: index } }],
    });
    const send = (stepIndex: number) => log.event(EventTypes.workflowSendPerformed, {
      runId: 'run_1', workflowId: 'p_1', stepIndex, sendIndex: 0, kind: 'emit', ok: true, detail: { emit_id: `m${stepIndex}` },
    });
    fold(db, model, [log.event(EventTypes.workflowRunStarted, started('run_1')), step(0, 'one'), send(0), step(1, 'two'), send(1)]);
    const written = () => rows<{ col: string }>(db, 'SELECT col FROM writes').map((r) => r.col).sort();
    expect(written()).toEqual(['results', 'sends']);
    const [row] = rows<{ results: string; sends: string }>(db, 'SELECT results, sends FROM rm_workflow_runs');
    expect((JSON.parse(row.results) as { name: string; ret: number }[]).map((r) => [r.name, r.ret])).toEqual([['one', 0], ['two', 1]]);
    expect((JSON.parse(row.sends) as { stepIndex: number }[]).map((x) => x.stepIndex)).toEqual([0, 1]);
    // The next batch starts from the row as written.
    fold(db, model, [send(1)]);
    expect(written()).toEqual(['results', 'sends', 'sends']);
    expect((JSON.parse(rows<{ sends: string }>(db, 'SELECT sends FROM rm_workflow_runs')[0].sends) as unknown[])).toHaveLength(2);
  });

  it('a start folded again in the same batch starts the run\'s row again, as folding it alone does', () => {
    const { db, log, model } = setup();
    const start = log.event(EventTypes.workflowRunStarted, started('run_1'));
    const step = log.event(EventTypes.workflowStepCompleted, {
      runId: 'run_1', workflowId: 'p_1', index: 0, name: 'one', status: 'succeeded', ret: 7, exports: {}, logs: [], durationMs: 1, sends: [],
    });
    fold(db, model, [start, step, start]);
    expect(rows<{ results: string }>(db, 'SELECT results FROM rm_workflow_runs')[0].results).toBe('[]');
    fold(db, model, [step]);
    expect(JSON.parse(rows<{ results: string }>(db, 'SELECT results FROM rm_workflow_runs')[0].results)).toMatchObject([{ ret: 7 }]);
  });

  it('keeps the last finished runs per workflow for listing, and never trims a run still running', () => {
    const { db, log, model } = setup();
    fold(db, model, [log.event(EventTypes.workflowRunStarted, started('run_open'))]);
    const events = [];
    for (let i = 0; i < KEPT_RUNS_PER_WORKFLOW + 40; i++) {
      events.push(log.event(EventTypes.workflowRunStarted, started(`run_${i}`)));
      events.push(log.event(EventTypes.workflowRunFinished, { runId: `run_${i}`, workflowId: 'p_1', accountId: 'u_1', status: 'succeeded', skipped: [] }));
    }
    fold(db, model, events);
    const finished = rows(db, "SELECT id FROM rm_workflow_runs WHERE status != 'running'");
    expect(finished.length).toBeGreaterThanOrEqual(KEPT_RUNS_PER_WORKFLOW);
    expect(finished.length).toBeLessThan(KEPT_RUNS_PER_WORKFLOW + 40);
    expect(rows(db, "SELECT id FROM rm_workflow_runs WHERE status = 'running'")).toEqual([{ id: 'run_open' }]);
  });
});
