import { createHash } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { WrongExpectedRevisionError } from '@app/event-store';
import { EventTypes, Streams } from '@app/domain';
import { ApiError } from '../http/api-error';
import { SluiceEngine } from '@app/engine';
import { CreateAutoSubscriptionCommand, CreateSubscriptionCommand, DeleteSubscriptionCommand } from './subscriptions.commands';

/**
 * The id of a subscription is derived from its account and triple, so creating the same triple
 * twice (even concurrently, even from two processes) lands on one stream and one id.
 */
export function subscriptionId(accountId: string, emitterId: string, listenerId: string, eventName: string): string {
  const h = createHash('sha256').update(`${accountId}\n${emitterId}\n${listenerId}\n${eventName}`).digest('base64url');
  return `sub_${h.replace(/[-_]/g, '').slice(0, 24)}`;
}

function notFoundField(field: string, id: string): ApiError {
  return new ApiError(404, 'not_found', `${field} ${id} not found`, { fields: { [field]: 'not found' } });
}

@CommandHandler(CreateSubscriptionCommand)
export class CreateSubscriptionHandler implements ICommandHandler<CreateSubscriptionCommand, string> {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}

  async execute(c: CreateSubscriptionCommand): Promise<string> {
    const q = this.engine.queries;
    const { emitterId, listenerId } = c;
    if (emitterId.startsWith('dc_') && emitterId !== 'dc_*') {
      const src = q.source(emitterId);
      if (!src || src.account_id !== c.accountId) throw notFoundField('emitter_id', emitterId);
    } else if (emitterId.startsWith('p_')) {
      throw ApiError.fields([{ field: 'emitter_id', message: 'workflows are not available yet; use a source id (dc_...) or dc_*' }]);
    } else if (emitterId !== 'dc_*') {
      throw ApiError.fields([{ field: 'emitter_id', message: 'must be a source id (dc_...) or dc_*' }]);
    }
    if (listenerId.startsWith('wh_')) {
      const wh = q.webhook(listenerId);
      if (!wh || wh.account_id !== c.accountId) throw notFoundField('listener_id', listenerId);
    } else if (listenerId.startsWith('p_') || listenerId.startsWith('dc_')) {
      throw ApiError.fields([{ field: 'listener_id', message: 'only webhooks (wh_...) can listen for now; workflow and source listeners come later' }]);
    } else {
      throw ApiError.fields([{ field: 'listener_id', message: 'must be a webhook id (wh_...)' }]);
    }
    const id = subscriptionId(c.accountId, emitterId, listenerId, c.eventName);
    for (let attempt = 0; attempt < 3; attempt++) {
      if (q.subscription(id)) return id;
      const stream = Streams.subscription(id);
      const rev = await this.engine.store.streamRevision(stream);
      try {
        await this.engine.appendAndProject(stream, [{
          type: EventTypes.subscriptionCreated,
          data: { subscriptionId: id, accountId: c.accountId, emitterId, listenerId, eventName: c.eventName },
          metadata: { actor: c.accountId },
        }], rev < 0n ? 'no_stream' : rev);
        return id;
      } catch (err) {
        if (!(err instanceof WrongExpectedRevisionError)) throw err;
        await this.engine.settle();
      }
    }
    throw new ApiError(409, 'conflict', 'the subscription was changed concurrently; retry');
  }
}

@CommandHandler(DeleteSubscriptionCommand)
export class DeleteSubscriptionHandler implements ICommandHandler<DeleteSubscriptionCommand, void> {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}

  async execute(c: DeleteSubscriptionCommand): Promise<void> {
    const sub = this.engine.queries.subscription(c.subscriptionId);
    if (!sub || sub.account_id !== c.accountId) throw ApiError.notFound(`subscription ${c.subscriptionId}`);
    await this.engine.appendAndProject(Streams.subscription(sub.id), [{
      type: EventTypes.subscriptionDeleted, data: { subscriptionId: sub.id, accountId: c.accountId, reason: c.reason }, metadata: { actor: c.accountId },
    }]);
  }
}

/** Same triple, same id: creating an auto-subscription twice returns the first. */
export function autoSubscriptionId(accountId: string, listenerId: string, eventName: string): string {
  return `asub_${createHash('sha256').update(`${accountId}\n${listenerId}\n${eventName}`).digest('base64url').replace(/[-_]/g, '').slice(0, 24)}`;
}

@CommandHandler(CreateAutoSubscriptionCommand)
export class CreateAutoSubscriptionHandler implements ICommandHandler<CreateAutoSubscriptionCommand, string> {
  constructor(@Inject(SluiceEngine) private readonly engine: SluiceEngine) {}

  async execute(c: CreateAutoSubscriptionCommand): Promise<string> {
    if (!c.listenerId.startsWith('wh_')) {
      throw ApiError.fields([{ field: 'listener_id', message: 'only webhooks (wh_...) can listen for now; workflow and source listeners come later' }]);
    }
    const wh = this.engine.queries.webhook(c.listenerId);
    if (!wh || wh.account_id !== c.accountId) throw notFoundField('listener_id', c.listenerId);
    const id = autoSubscriptionId(c.accountId, c.listenerId, c.eventName);
    if (this.engine.queries.autoSubscriptions(c.accountId).some((a) => a.id === id)) return id;
    try {
      await this.engine.appendAndProject(Streams.autoSubscription(id), [{
        type: EventTypes.autoSubscriptionCreated,
        data: { autoSubscriptionId: id, accountId: c.accountId, listenerId: c.listenerId, eventName: c.eventName },
        metadata: { actor: c.accountId },
      }], 'no_stream');
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError)) throw err;
    }
    return id;
  }
}

export const SUBSCRIPTION_HANDLERS = [CreateSubscriptionHandler, DeleteSubscriptionHandler, CreateAutoSubscriptionHandler];
