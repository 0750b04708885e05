import { EventTypes, newId, Streams } from '@app/domain';
import { generateWebhookSecret } from '@app/delivery';
import { ConflictError, NotFoundError } from '../engine-errors';
import type { EngineRuntime } from '../engine-runtime';
import { cascadeDeleteSubscriptions } from './subscription-cascade';

/** How long the previous signing secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

/** Fields of a webhook a caller may change. */
export interface WebhookChanges {
  url?: string;
  name?: string;
  description?: string;
  active?: boolean;
}

/**
 * Webhooks and their deliveries. A re-enabled webhook and a retry request are only recorded here:
 * sending what became due follows from the committed events (`runCommittedSideEffects`).
 */
export class WebhookUseCases {
  constructor(private readonly rt: EngineRuntime) {}

  /** Creates a webhook; returns its id and its signing secret (shown once, kept sealed). */
  async create(accountId: string, w: { url: string; name: string; description: string }): Promise<{ id: string; secret: string }> {
    this.rt.assertWritable();
    const id = newId('wh');
    const secret = generateWebhookSecret();
    await this.rt.appendAndProject(Streams.webhook(id), [{
      type: EventTypes.webhookCreated,
      data: { webhookId: id, accountId, url: w.url, name: w.name, description: w.description, secret: this.rt.box.seal(secret) },
      metadata: { actor: accountId },
    }], 'no_stream');
    return { id, secret };
  }

  async update(accountId: string, webhookId: string, changes: WebhookChanges): Promise<void> {
    this.rt.assertWritable();
    this.rt.queries.ownWebhook(accountId, webhookId);
    await this.rt.appendAndProject(Streams.webhook(webhookId), [{
      type: EventTypes.webhookUpdated, data: { webhookId, ...changes }, metadata: { actor: accountId },
    }], 'stream_exists');
  }

  /** Deletes a webhook and, recorded one by one so the audit trail says why, its subscriptions. */
  async delete(accountId: string, webhookId: string): Promise<void> {
    this.rt.assertWritable();
    this.rt.queries.ownWebhook(accountId, webhookId);
    const subs = this.rt.queries.subscriptionsByListener(webhookId).map((s) => s.id);
    await cascadeDeleteSubscriptions(this.rt, accountId, subs, `webhook ${webhookId} deleted`);
    await this.rt.appendAndProject(Streams.webhook(webhookId), [{
      type: EventTypes.webhookDeleted, data: { webhookId, accountId }, metadata: { actor: accountId },
    }], 'stream_exists');
  }

  /** A new signing secret; the previous one keeps signing for ROTATION_OVERLAP_MS. */
  async rotateSecret(accountId: string, webhookId: string): Promise<string> {
    this.rt.assertWritable();
    this.rt.queries.ownWebhook(accountId, webhookId);
    const secret = generateWebhookSecret();
    await this.rt.appendAndProject(Streams.webhook(webhookId), [{
      type: EventTypes.webhookSecretRotated,
      data: { webhookId, secret: this.rt.box.seal(secret), previousValidUntil: Date.now() + ROTATION_OVERLAP_MS },
      metadata: { actor: accountId },
    }], 'stream_exists');
    return secret;
  }

  /** Sends a failed or exhausted delivery again now. */
  async retry(accountId: string, webhookId: string, deliveryId: string): Promise<void> {
    this.rt.assertWritable();
    this.rt.queries.ownWebhook(accountId, webhookId);
    const row = this.rt.queries.delivery(deliveryId);
    if (!row || row.webhook_id !== webhookId) throw new NotFoundError(`delivery ${deliveryId}`);
    if (row.status === 'delivered' || row.status === 'pending') {
      throw new ConflictError(`delivery ${deliveryId} is ${row.status}; only failed or exhausted deliveries can be retried`);
    }
    await this.requestRetries(accountId, webhookId, [deliveryId]);
  }

  /** Sends again every delivery of the webhook that failed since `sinceMs`; returns how many. */
  async recover(accountId: string, webhookId: string, sinceMs: number): Promise<number> {
    this.rt.assertWritable();
    this.rt.queries.ownWebhook(accountId, webhookId);
    const ids = this.rt.queries.failedDeliveriesSince(webhookId, sinceMs).map((r) => r.id);
    return this.requestRetries(accountId, webhookId, ids);
  }

  private async requestRetries(accountId: string, webhookId: string, deliveryIds: string[]): Promise<number> {
    if (deliveryIds.length === 0) return 0;
    await this.rt.appendAndProject(Streams.delivery(webhookId), deliveryIds.map((deliveryId) => ({
      type: EventTypes.deliveryRetryRequested, data: { deliveryId, webhookId }, metadata: { actor: accountId },
    })));
    return deliveryIds.length;
  }
}
