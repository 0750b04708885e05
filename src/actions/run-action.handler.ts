import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { ActionRunOutcome, ActionUseCases } from '@app/engine';
import { RunActionCommand } from './run-action.command';

@CommandHandler(RunActionCommand)
export class RunActionHandler implements ICommandHandler<RunActionCommand, ActionRunOutcome> {
  constructor(@Inject(ActionUseCases) private readonly actions: ActionUseCases) {}
  execute(c: RunActionCommand): Promise<ActionRunOutcome> {
    return this.actions.run(c.accountId, c.action);
  }
}

export const ACTION_HANDLERS = [RunActionHandler];
