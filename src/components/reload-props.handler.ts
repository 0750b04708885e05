import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import type { PropDefinition } from '@app/domain';
import { PropUseCases } from '@app/engine';
import { ReloadPropsCommand } from './reload-props.command';

/** Runs `additionalProps()` for the account's values and returns the merged props; nothing is recorded. */
@CommandHandler(ReloadPropsCommand)
export class ReloadPropsHandler implements ICommandHandler<ReloadPropsCommand, PropDefinition[]> {
  constructor(@Inject(PropUseCases) private readonly props: PropUseCases) {}
  execute(c: ReloadPropsCommand): Promise<PropDefinition[]> {
    return this.props.reload(c.accountId, c.componentId, c.configuredProps);
  }
}
