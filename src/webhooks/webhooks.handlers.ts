import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { WebhookUseCases } from '@app/engine';
import {
  CreateWebhookCommand, DeleteWebhookCommand, RecoverDeliveriesCommand, RetryDeliveryCommand, RotateWebhookSecretCommand, UpdateWebhookCommand,
} from './webhooks.commands';

@CommandHandler(CreateWebhookCommand)
export class CreateWebhookHandler implements ICommandHandler<CreateWebhookCommand, { id: string; secret: string }> {
  constructor(@Inject(WebhookUseCases) private readonly webhooks: WebhookUseCases) {}
  execute(c: CreateWebhookCommand): Promise<{ id: string; secret: string }> {
    return this.webhooks.create(c.accountId, { url: c.url, name: c.name, description: c.description });
  }
}

@CommandHandler(UpdateWebhookCommand)
export class UpdateWebhookHandler implements ICommandHandler<UpdateWebhookCommand, void> {
  constructor(@Inject(WebhookUseCases) private readonly webhooks: WebhookUseCases) {}
  execute(c: UpdateWebhookCommand): Promise<void> {
    return this.webhooks.update(c.accountId, c.webhookId, c.changes);
  }
}

@CommandHandler(DeleteWebhookCommand)
export class DeleteWebhookHandler implements ICommandHandler<DeleteWebhookCommand, void> {
  constructor(@Inject(WebhookUseCases) private readonly webhooks: WebhookUseCases) {}
  execute(c: DeleteWebhookCommand): Promise<void> {
    return this.webhooks.delete(c.accountId, c.webhookId);
  }
}

@CommandHandler(RotateWebhookSecretCommand)
export class RotateWebhookSecretHandler implements ICommandHandler<RotateWebhookSecretCommand, string> {
  constructor(@Inject(WebhookUseCases) private readonly webhooks: WebhookUseCases) {}
  execute(c: RotateWebhookSecretCommand): Promise<string> {
    return this.webhooks.rotateSecret(c.accountId, c.webhookId);
  }
}

@CommandHandler(RetryDeliveryCommand)
export class RetryDeliveryHandler implements ICommandHandler<RetryDeliveryCommand, void> {
  constructor(@Inject(WebhookUseCases) private readonly webhooks: WebhookUseCases) {}
  execute(c: RetryDeliveryCommand): Promise<void> {
    return this.webhooks.retry(c.accountId, c.webhookId, c.deliveryId);
  }
}

@CommandHandler(RecoverDeliveriesCommand)
export class RecoverDeliveriesHandler implements ICommandHandler<RecoverDeliveriesCommand, number> {
  constructor(@Inject(WebhookUseCases) private readonly webhooks: WebhookUseCases) {}
  execute(c: RecoverDeliveriesCommand): Promise<number> {
    return this.webhooks.recover(c.accountId, c.webhookId, c.sinceMs);
  }
}

export const WEBHOOK_HANDLERS = [
  CreateWebhookHandler, UpdateWebhookHandler, DeleteWebhookHandler, RotateWebhookSecretHandler, RetryDeliveryHandler, RecoverDeliveriesHandler,
];
