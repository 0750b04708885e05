import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { AppUseCases, ResolvedApp } from '@app/engine';
import {
  CompleteOAuthCommand, ConnectAccountCommand, DeleteConnectedAccountCommand, RegisterAppCommand, StartOAuthCommand, UpdateConnectedAccountCommand,
} from './apps.commands';

@CommandHandler(RegisterAppCommand)
export class RegisterAppHandler implements ICommandHandler<RegisterAppCommand, ResolvedApp> {
  constructor(@Inject(AppUseCases) private readonly apps: AppUseCases) {}
  execute(c: RegisterAppCommand): Promise<ResolvedApp> {
    return this.apps.register(c.accountId, c.input);
  }
}

@CommandHandler(ConnectAccountCommand)
export class ConnectAccountHandler implements ICommandHandler<ConnectAccountCommand, string> {
  constructor(@Inject(AppUseCases) private readonly apps: AppUseCases) {}
  execute(c: ConnectAccountCommand): Promise<string> {
    return this.apps.connect(c.accountId, c.account);
  }
}

@CommandHandler(UpdateConnectedAccountCommand)
export class UpdateConnectedAccountHandler implements ICommandHandler<UpdateConnectedAccountCommand, void> {
  constructor(@Inject(AppUseCases) private readonly apps: AppUseCases) {}
  execute(c: UpdateConnectedAccountCommand): Promise<void> {
    return this.apps.update(c.accountId, c.id, { name: c.name, credentials: c.credentials });
  }
}

@CommandHandler(DeleteConnectedAccountCommand)
export class DeleteConnectedAccountHandler implements ICommandHandler<DeleteConnectedAccountCommand, void> {
  constructor(@Inject(AppUseCases) private readonly apps: AppUseCases) {}
  execute(c: DeleteConnectedAccountCommand): Promise<void> {
    return this.apps.delete(c.accountId, c.id);
  }
}

@CommandHandler(StartOAuthCommand)
export class StartOAuthHandler implements ICommandHandler<StartOAuthCommand, string> {
  constructor(@Inject(AppUseCases) private readonly apps: AppUseCases) {}
  async execute(c: StartOAuthCommand): Promise<string> {
    return this.apps.oauthStart(c.accountId, c.app, c.name, c.reconnect);
  }
}

@CommandHandler(CompleteOAuthCommand)
export class CompleteOAuthHandler implements ICommandHandler<CompleteOAuthCommand, { accountId: string; id: string }> {
  constructor(@Inject(AppUseCases) private readonly apps: AppUseCases) {}
  execute(c: CompleteOAuthCommand): Promise<{ accountId: string; id: string }> {
    return this.apps.oauthCallback(c.callback);
  }
}

export const APP_HANDLERS = [
  RegisterAppHandler, ConnectAccountHandler, UpdateConnectedAccountHandler, DeleteConnectedAccountHandler, StartOAuthHandler, CompleteOAuthHandler,
];
