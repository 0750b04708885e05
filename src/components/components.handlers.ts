import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { ComponentUseCases } from '@app/engine';
import { SaveComponentCommand } from './components.commands';
import { ListPropOptionsHandler } from './list-prop-options.handler';
import { ReloadPropsHandler } from './reload-props.handler';
import { UnpublishComponentHandler } from './unpublish-component.handler';

@CommandHandler(SaveComponentCommand)
export class SaveComponentHandler implements ICommandHandler<SaveComponentCommand, string> {
  constructor(@Inject(ComponentUseCases) private readonly components: ComponentUseCases) {}
  execute(c: SaveComponentCommand): Promise<string> {
    return this.components.save(c.accountId, c.from, { publish: c.publish });
  }
}

export const COMPONENT_HANDLERS = [SaveComponentHandler, ListPropOptionsHandler, ReloadPropsHandler, UnpublishComponentHandler];
