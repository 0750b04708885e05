import type { WebhookChanges } from '@app/engine';

/** Commands of the webhooks slice (handled in webhooks.handlers.ts). */
export class CreateWebhookCommand {
  constructor(readonly accountId: string, readonly url: string, readonly name: string, readonly description: string) {}
}
export class UpdateWebhookCommand {
  constructor(readonly accountId: string, readonly webhookId: string, readonly changes: WebhookChanges) {}
}
export class DeleteWebhookCommand {
  constructor(readonly accountId: string, readonly webhookId: string) {}
}
export class RotateWebhookSecretCommand {
  constructor(readonly accountId: string, readonly webhookId: string) {}
}
export class RetryDeliveryCommand {
  constructor(readonly accountId: string, readonly webhookId: string, readonly deliveryId: string) {}
}
export class RecoverDeliveriesCommand {
  constructor(readonly accountId: string, readonly webhookId: string, readonly sinceMs: number) {}
}
