import type { NewSluiceEvent, SluiceEvent } from './events';
import { EventTypes } from './events';
import type { WorkflowConfig } from './workflow-events';

/** A workflow folded from `workflow-<p>`. */
export interface WorkflowState {
  workflowId: string;
  /** Stream revision of the last event folded (-1: no stream). */
  revision: bigint;
  accountId?: string;
  version: number;
  config?: WorkflowConfig;
  deleted: boolean;
}

export type WorkflowStreamEvent = Extract<SluiceEvent, { type: 'workflow.created.v1' | 'workflow.updated.v1' | 'workflow.deleted.v1' }>;

export function initialWorkflowState(workflowId: string): WorkflowState {
  return { workflowId, revision: -1n, version: 0, deleted: false };
}

/** Folds one event of the workflow's stream. */
export function evolveWorkflow(state: WorkflowState, e: WorkflowStreamEvent, revision: bigint): WorkflowState {
  state.revision = revision;
  switch (e.type) {
    case 'workflow.created.v1':
    case 'workflow.updated.v1':
      state.accountId = e.data.accountId;
      state.version = e.data.version;
      state.config = e.data.config;
      return state;
    case 'workflow.deleted.v1':
      state.deleted = true;
      return state;
  }
}

export type WorkflowCommand =
  | { type: 'create'; accountId: string; config: WorkflowConfig }
  | { type: 'update'; config: WorkflowConfig }
  | { type: 'delete' };

export interface WorkflowRejection { code: 'exists' | 'not_found'; message: string }

/** What a command on a workflow records, or why it is refused. Pure. */
export function decideWorkflow(state: WorkflowState, c: WorkflowCommand): { events: NewSluiceEvent[] } | { rejected: WorkflowRejection } {
  const id = state.workflowId;
  switch (c.type) {
    case 'create':
      if (state.revision >= 0n) return { rejected: { code: 'exists', message: `workflow ${id} already exists` } };
      return { events: [{ type: EventTypes.workflowCreated, data: { workflowId: id, accountId: c.accountId, version: 1, config: c.config } }] };
    case 'update':
      if (!state.config || state.deleted) return { rejected: { code: 'not_found', message: `workflow ${id} not found` } };
      return {
        events: [{
          type: EventTypes.workflowUpdated,
          data: { workflowId: id, accountId: state.accountId!, version: state.version + 1, config: c.config },
        }],
      };
    case 'delete':
      if (!state.config || state.deleted) return { rejected: { code: 'not_found', message: `workflow ${id} not found` } };
      return { events: [{ type: EventTypes.workflowDeleted, data: { workflowId: id, accountId: state.accountId! } }] };
  }
}
