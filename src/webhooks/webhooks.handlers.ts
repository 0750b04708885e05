import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { EventTypes, newId, Streams } from '@app/domain';
import { generateWebhookSecret } from '@app/delivery';
import { ApiError } from '../http/api-error';
import { SluiceEngine } from '@app/engine';
import {
  CreateWebhookCommand, DeleteWebhookCommand, RetryDeliveriesCommand, RotateWebhookSecretCommand, UpdateWebhookCommand,
} from './webhooks.commands';

/** How long the previous signing secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

/** Loads a webhook of the account or answers 404 (also for another account's webhook). */
export function ownWebhook(engine: SluiceEngine, accountId: string, webhookId: string) {
  const row = engine.queries.webhook(webhookId);
  if (!row || row.account_id !== accountId) throw ApiError.notFound(`webhook ${webhookId}`);
  return row;
}

@CommandHandler(CreateWebhookCommand)
export class CreateWebhookHandler implements ICommandHandler<CreateWebhookCommand, { id: string; secret: string }> {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}
  async execute(c: CreateWebhookCommand): Promise<{ id: string; secret: string }> {
    const id = newId('wh');
    const secret = generateWebhookSecret();
    await this.engine.appendAndProject(Streams.webhook(id), [{
      type: EventTypes.webhookCreated,
      data: { webhookId: id, accountId: c.accountId, url: c.url, name: c.name, description: c.description, secret: this.engine.box.seal(secret) },
      metadata: { actor: c.accountId },
    }], 'no_stream');
    return { id, secret };
  }
}

@CommandHandler(UpdateWebhookCommand)
export class UpdateWebhookHandler implements ICommandHandler<UpdateWebhookCommand, void> {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}
  async execute(c: UpdateWebhookCommand): Promise<void> {
    ownWebhook(this.engine, c.accountId, c.webhookId);
    await this.engine.appendAndProject(Streams.webhook(c.webhookId), [{
      type: EventTypes.webhookUpdated, data: { webhookId: c.webhookId, ...c.changes }, metadata: { actor: c.accountId },
    }], 'stream_exists');
    // Re-enabled: whatever waited in the schedule goes out now.
    if (c.changes.active === true) this.engine.sender.enqueueDue();
  }
}

@CommandHandler(DeleteWebhookCommand)
export class DeleteWebhookHandler implements ICommandHandler<DeleteWebhookCommand, void> {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}
  async execute(c: DeleteWebhookCommand): Promise<void> {
    ownWebhook(this.engine, c.accountId, c.webhookId);
    // Cascade recorded explicitly, so the audit trail says why each subscription went.
    for (const sub of this.engine.queries.subscriptionsByListener(c.webhookId)) {
      await this.engine.store.append(Streams.subscription(sub.id), [{
        type: EventTypes.subscriptionDeleted, data: { subscriptionId: sub.id, accountId: c.accountId, reason: `webhook ${c.webhookId} deleted` },
        metadata: { actor: c.accountId },
      }]);
    }
    await this.engine.appendAndProject(Streams.webhook(c.webhookId), [{
      type: EventTypes.webhookDeleted, data: { webhookId: c.webhookId, accountId: c.accountId }, metadata: { actor: c.accountId },
    }], 'stream_exists');
  }
}

@CommandHandler(RotateWebhookSecretCommand)
export class RotateWebhookSecretHandler implements ICommandHandler<RotateWebhookSecretCommand, string> {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}
  async execute(c: RotateWebhookSecretCommand): Promise<string> {
    ownWebhook(this.engine, c.accountId, c.webhookId);
    const secret = generateWebhookSecret();
    await this.engine.appendAndProject(Streams.webhook(c.webhookId), [{
      type: EventTypes.webhookSecretRotated,
      data: { webhookId: c.webhookId, secret: this.engine.box.seal(secret), previousValidUntil: Date.now() + ROTATION_OVERLAP_MS },
      metadata: { actor: c.accountId },
    }], 'stream_exists');
    return secret;
  }
}

@CommandHandler(RetryDeliveriesCommand)
export class RetryDeliveriesHandler implements ICommandHandler<RetryDeliveriesCommand, number> {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}
  async execute(c: RetryDeliveriesCommand): Promise<number> {
    ownWebhook(this.engine, c.accountId, c.webhookId);
    const events = c.deliveryIds.map((deliveryId) => ({
      type: EventTypes.deliveryRetryRequested, data: { deliveryId, webhookId: c.webhookId }, metadata: { actor: c.accountId },
    }));
    if (events.length === 0) return 0;
    await this.engine.appendAndProject(Streams.delivery(c.webhookId), events);
    this.engine.sender.enqueueDue();
    return events.length;
  }
}

export const WEBHOOK_HANDLERS = [
  CreateWebhookHandler, UpdateWebhookHandler, DeleteWebhookHandler, RotateWebhookSecretHandler, RetryDeliveriesHandler,
];
