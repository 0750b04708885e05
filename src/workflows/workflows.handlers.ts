import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { WorkflowUseCases } from '@app/engine';
import { CreateWorkflowCommand, DeleteWorkflowCommand, RunWorkflowCommand, UpdateWorkflowCommand } from './workflows.commands';

@CommandHandler(CreateWorkflowCommand)
export class CreateWorkflowHandler implements ICommandHandler<CreateWorkflowCommand, string> {
  constructor(@Inject(WorkflowUseCases) private readonly workflows: WorkflowUseCases) {}
  execute(c: CreateWorkflowCommand): Promise<string> {
    return this.workflows.create(c.accountId, c.input);
  }
}

@CommandHandler(UpdateWorkflowCommand)
export class UpdateWorkflowHandler implements ICommandHandler<UpdateWorkflowCommand, string> {
  constructor(@Inject(WorkflowUseCases) private readonly workflows: WorkflowUseCases) {}
  execute(c: UpdateWorkflowCommand): Promise<string> {
    return this.workflows.update(c.accountId, c.idOrSlug, c.input);
  }
}

@CommandHandler(DeleteWorkflowCommand)
export class DeleteWorkflowHandler implements ICommandHandler<DeleteWorkflowCommand, string> {
  constructor(@Inject(WorkflowUseCases) private readonly workflows: WorkflowUseCases) {}
  execute(c: DeleteWorkflowCommand): Promise<string> {
    return this.workflows.delete(c.accountId, c.idOrSlug);
  }
}

@CommandHandler(RunWorkflowCommand)
export class RunWorkflowHandler implements ICommandHandler<RunWorkflowCommand, string> {
  constructor(@Inject(WorkflowUseCases) private readonly workflows: WorkflowUseCases) {}
  execute(c: RunWorkflowCommand): Promise<string> {
    return this.workflows.runNow(c.accountId, c.idOrSlug, c.event);
  }
}

export const WORKFLOW_HANDLERS = [CreateWorkflowHandler, UpdateWorkflowHandler, DeleteWorkflowHandler, RunWorkflowHandler];
