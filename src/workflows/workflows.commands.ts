import type { WorkflowInput } from '@app/engine';

/** Commands of the workflows slice (handled in workflows.handlers.ts). */
export class CreateWorkflowCommand {
  constructor(readonly accountId: string, readonly input: WorkflowInput) {}
}
export class UpdateWorkflowCommand {
  constructor(readonly accountId: string, readonly idOrSlug: string, readonly input: WorkflowInput) {}
}
export class DeleteWorkflowCommand {
  constructor(readonly accountId: string, readonly idOrSlug: string) {}
}
export class RunWorkflowCommand {
  constructor(readonly accountId: string, readonly idOrSlug: string, readonly event: unknown) {}
}
