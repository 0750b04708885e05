import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { PropOptionsPage, PropUseCases } from '@app/engine';
import { ListPropOptionsCommand } from './list-prop-options.command';

/** Runs the prop's options in the sandbox for the account; nothing is recorded. */
@CommandHandler(ListPropOptionsCommand)
export class ListPropOptionsHandler implements ICommandHandler<ListPropOptionsCommand, PropOptionsPage> {
  constructor(@Inject(PropUseCases) private readonly props: PropUseCases) {}
  execute(c: ListPropOptionsCommand): Promise<PropOptionsPage> {
    return this.props.options(c.accountId, c.componentId, c.prop, c.request);
  }
}
