/** Commands of the webhooks slice (handled in webhooks.handlers.ts). */
export class CreateWebhookCommand {
  constructor(readonly accountId: string, readonly url: string, readonly name: string, readonly description: string) {}
}
export class UpdateWebhookCommand {
  constructor(
    readonly accountId: string, readonly webhookId: string,
    readonly changes: { url?: string; name?: string; description?: string; active?: boolean },
  ) {}
}
export class DeleteWebhookCommand {
  constructor(readonly accountId: string, readonly webhookId: string) {}
}
export class RotateWebhookSecretCommand {
  constructor(readonly accountId: string, readonly webhookId: string) {}
}
export class RetryDeliveriesCommand {
  constructor(readonly accountId: string, readonly webhookId: string, readonly deliveryIds: string[]) {}
}
