import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { ComponentUseCases } from '@app/engine';
import { UnpublishComponentCommand } from './unpublish-component.command';

/** Resolves with the `key@version` entries that left the registry, oldest published first. */
@CommandHandler(UnpublishComponentCommand)
export class UnpublishComponentHandler implements ICommandHandler<UnpublishComponentCommand, string[]> {
  constructor(@Inject(ComponentUseCases) private readonly components: ComponentUseCases) {}

  execute(c: UnpublishComponentCommand): Promise<string[]> {
    return this.components.unpublish(c.accountId, c.key, c.version);
  }
}
