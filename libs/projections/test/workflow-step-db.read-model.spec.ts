import { EventTypes, WorkflowStepCompleted } from '@app/domain';
import { WorkflowStepDbReadModel } from '../src/read-models/workflow-step-db.read-model';
import { WorkflowQueries } from '../src/workflow-queries';
import { WorkflowRunsReadModel } from '../src/read-models/workflow-runs.read-model';
import { WorkflowsReadModel } from '../src/read-models/workflows.read-model';
import { databaseWith, fold, TestLog } from './read-model-harness';

const step = (runId: string, name: string, dbWrites: { key: string; value: unknown }[]): WorkflowStepCompleted => ({
  runId, workflowId: 'p_1', index: 0, name, status: 'succeeded', exports: {}, logs: [], durationMs: 1, sends: [], dbWrites,
});

describe('WorkflowStepDbReadModel', () => {
  it('given db writes of two runs of a step, then the step\'s store holds the last value of each key, apart from other steps', () => {
    const db = databaseWith(WorkflowStepDbReadModel.definition, WorkflowsReadModel.definition, WorkflowRunsReadModel.definition);
    const log = new TestLog();
    const model = new WorkflowStepDbReadModel(db);
    fold(db, model, [
      log.event(EventTypes.workflowStepCompleted, step('run_1', 'count', [{ key: 'n', value: 1 }, { key: 'seen', value: ['a'] }])),
      log.event(EventTypes.workflowStepCompleted, step('run_2', 'count', [{ key: 'n', value: 2 }])),
      log.event(EventTypes.workflowStepCompleted, step('run_2', 'other', [{ key: 'n', value: 99 }])),
    ]);
    const q = new WorkflowQueries(db);
    expect(q.stepDb('p_1', 'count')).toEqual({ n: 2, seen: ['a'] });
    expect(q.stepDb('p_1', 'other')).toEqual({ n: 99 });
    fold(db, model, [log.event(EventTypes.workflowDeleted, { workflowId: 'p_1', accountId: 'u_1' })]);
    expect(q.stepDb('p_1', 'count')).toEqual({});
  });
});
