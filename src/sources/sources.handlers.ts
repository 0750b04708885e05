import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { RunOutcome, SourceUseCases } from '@app/engine';
import { ClearSourceEventsCommand, DeleteSourceCommand, DeploySourceCommand, RunSourceNowCommand, UpdateSourceCommand } from './sources.commands';

@CommandHandler(DeploySourceCommand)
export class DeploySourceHandler implements ICommandHandler<DeploySourceCommand, string> {
  constructor(@Inject(SourceUseCases) private readonly sources: SourceUseCases) {}
  execute(c: DeploySourceCommand): Promise<string> {
    return this.sources.deploy(c.accountId, c.source);
  }
}

@CommandHandler(UpdateSourceCommand)
export class UpdateSourceHandler implements ICommandHandler<UpdateSourceCommand, string> {
  constructor(@Inject(SourceUseCases) private readonly sources: SourceUseCases) {}
  execute(c: UpdateSourceCommand): Promise<string> {
    return this.sources.update(c.accountId, c.sourceId, c.changes);
  }
}

@CommandHandler(DeleteSourceCommand)
export class DeleteSourceHandler implements ICommandHandler<DeleteSourceCommand, string> {
  constructor(@Inject(SourceUseCases) private readonly sources: SourceUseCases) {}
  execute(c: DeleteSourceCommand): Promise<string> {
    return this.sources.delete(c.accountId, c.sourceId, { ignoreHookErrors: c.ignoreHookErrors });
  }
}

@CommandHandler(RunSourceNowCommand)
export class RunSourceNowHandler implements ICommandHandler<RunSourceNowCommand, RunOutcome> {
  constructor(@Inject(SourceUseCases) private readonly sources: SourceUseCases) {}
  execute(c: RunSourceNowCommand): Promise<RunOutcome> {
    return this.sources.runNow(c.accountId, c.sourceId);
  }
}

@CommandHandler(ClearSourceEventsCommand)
export class ClearSourceEventsHandler implements ICommandHandler<ClearSourceEventsCommand, string> {
  constructor(@Inject(SourceUseCases) private readonly sources: SourceUseCases) {}
  execute(c: ClearSourceEventsCommand): Promise<string> {
    return this.sources.clearEvents(c.accountId, c.sourceId, { startId: c.startId, endId: c.endId });
  }
}

export const SOURCE_HANDLERS = [DeploySourceHandler, UpdateSourceHandler, DeleteSourceHandler, RunSourceNowHandler, ClearSourceEventsHandler];
