import type { AppRegistrationInput } from '@app/domain';
import type { ConnectAccount, OAuthCallback } from '@app/engine';

/** Commands of the apps slice (handled in apps.handlers.ts). */
export class RegisterAppCommand {
  constructor(readonly accountId: string, readonly input: AppRegistrationInput) {}
}
export class ConnectAccountCommand {
  constructor(readonly accountId: string, readonly account: ConnectAccount) {}
}
export class UpdateConnectedAccountCommand {
  constructor(readonly accountId: string, readonly id: string, readonly name: string | undefined, readonly credentials: unknown) {}
}
export class DeleteConnectedAccountCommand {
  constructor(readonly accountId: string, readonly id: string) {}
}
/** Builds the provider's authorize URL (nothing is recorded until the callback). */
export class StartOAuthCommand {
  constructor(readonly accountId: string, readonly app: string, readonly name: string | undefined, readonly reconnect: string | undefined) {}
}
export class CompleteOAuthCommand {
  constructor(readonly callback: OAuthCallback) {}
}
