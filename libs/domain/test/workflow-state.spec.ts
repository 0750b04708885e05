import { decideWorkflow, event, EventTypes, evolveWorkflow, initialWorkflowState, WorkflowConfig, WorkflowStreamEvent } from '@app/domain';

const config: WorkflowConfig = {
  name: 'Flow', nameSlug: 'flow', active: true, trigger: { type: 'manual' }, settings: { concurrency: 1 },
  steps: [{ name: 'one', componentId: 'sc_1', configuredProps: {} }],
};
function given(...history: WorkflowStreamEvent[]) {
  const s = initialWorkflowState('p_1');
  history.forEach((e, i) => evolveWorkflow(s, e, BigInt(i)));
  return s;
}
const created = event(EventTypes.workflowCreated, { workflowId: 'p_1', accountId: 'u_1', version: 1, config });

describe('decideWorkflow', () => {
  it('given nothing, when create, then version 1 is recorded', () => {
    expect(decideWorkflow(given(), { type: 'create', accountId: 'u_1', config })).toEqual({ events: [created] });
  });
  it('given a workflow, when updated, then the next version is recorded with the whole definition', () => {
    const next = { ...config, name: 'Other' };
    expect(decideWorkflow(given(created), { type: 'update', config: next })).toEqual({
      events: [event(EventTypes.workflowUpdated, { workflowId: 'p_1', accountId: 'u_1', version: 2, config: next })],
    });
  });
  it('given a workflow, when create again, then it is refused', () => {
    expect(decideWorkflow(given(created), { type: 'create', accountId: 'u_1', config })).toEqual({
      rejected: { code: 'exists', message: 'workflow p_1 already exists' },
    });
  });
  it('given a deleted workflow, when updated or deleted, then it is not found', () => {
    const deleted = event(EventTypes.workflowDeleted, { workflowId: 'p_1', accountId: 'u_1' });
    expect(decideWorkflow(given(created, deleted), { type: 'update', config })).toEqual({ rejected: { code: 'not_found', message: 'workflow p_1 not found' } });
    expect(decideWorkflow(given(created, deleted), { type: 'delete' })).toEqual({ rejected: { code: 'not_found', message: 'workflow p_1 not found' } });
    expect(decideWorkflow(given(created), { type: 'delete' })).toEqual({ events: [deleted] });
  });
});
