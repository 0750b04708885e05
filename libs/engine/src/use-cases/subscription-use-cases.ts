import { createHash } from 'node:crypto';
import { WrongExpectedRevisionError } from '@app/event-store';
import { EventTypes, Streams } from '@app/domain';
import { ConflictError, InvalidFieldsError, NotFoundError } from '../engine-errors';
import type { EngineRuntime } from '../engine-runtime';

/** Who listens to whom, on which channel (`''`: every channel). */
export interface SubscriptionTriple {
  emitterId: string;
  listenerId: string;
  eventName: string;
}

/**
 * The id of a subscription is derived from its account and triple, so creating the same triple
 * twice (even concurrently, even from two processes) lands on one stream and one id.
 */
export function subscriptionId(accountId: string, emitterId: string, listenerId: string, eventName: string): string {
  const h = createHash('sha256').update(`${accountId}\n${emitterId}\n${listenerId}\n${eventName}`).digest('base64url');
  return `sub_${h.replace(/[-_]/g, '').slice(0, 24)}`;
}

/** Same triple, same id: creating an auto-subscription twice returns the first. */
export function autoSubscriptionId(accountId: string, listenerId: string, eventName: string): string {
  return `asub_${createHash('sha256').update(`${accountId}\n${listenerId}\n${eventName}`).digest('base64url').replace(/[-_]/g, '').slice(0, 24)}`;
}

/**
 * Subscriptions of listeners (webhooks, sources, workflows) to the emits of sources and
 * workflows, and auto-subscriptions to sources deployed later.
 */
export class SubscriptionUseCases {
  constructor(private readonly rt: EngineRuntime) {}

  /**
   * Subscribes a listener (`wh_`, `dc_`, `p_`) to a source or workflow of the account, or to
   * all of them (`dc_*`, `p_*`); idempotent per triple.
   */
  async create(accountId: string, t: SubscriptionTriple): Promise<string> {
    this.rt.assertWritable();
    const q = this.rt.queries;
    const { emitterId, listenerId } = t;
    if (emitterId === 'dc_*' || emitterId === 'p_*') {
      // Account-wide: every source (or workflow) of the account, now and later.
    } else if (emitterId.startsWith('dc_')) {
      if (!this.ownsSource(accountId, emitterId)) throw new NotFoundError(`emitter_id ${emitterId}`, 'emitter_id');
    } else if (emitterId.startsWith('p_')) {
      if (!this.ownsWorkflow(accountId, emitterId)) throw new NotFoundError(`emitter_id ${emitterId}`, 'emitter_id');
    } else {
      throw new InvalidFieldsError([{ field: 'emitter_id', message: 'must be a source id (dc_...), a workflow id (p_...), dc_* or p_*' }]);
    }
    this.checkListener(accountId, listenerId);
    const id = subscriptionId(accountId, emitterId, listenerId, t.eventName);
    for (let attempt = 0; attempt < 3; attempt++) {
      if (q.subscription(id)) return id;
      const stream = Streams.subscription(id);
      const rev = await this.rt.store.streamRevision(stream);
      try {
        await this.rt.appendAndProject(stream, [{
          type: EventTypes.subscriptionCreated,
          data: { subscriptionId: id, accountId, emitterId, listenerId, eventName: t.eventName },
          metadata: { actor: accountId },
        }], rev < 0n ? 'no_stream' : rev);
        return id;
      } catch (err) {
        if (!(err instanceof WrongExpectedRevisionError)) throw err;
        await this.rt.settle();
      }
    }
    throw new ConflictError('the subscription was changed concurrently; retry');
  }

  /** Deletes a subscription of the account; `reason` goes to the audit trail. */
  async delete(accountId: string, subscriptionId: string, reason?: string): Promise<void> {
    this.rt.assertWritable();
    const sub = this.rt.queries.ownSubscription(accountId, subscriptionId);
    await this.rt.appendAndProject(Streams.subscription(sub.id), [{
      type: EventTypes.subscriptionDeleted, data: { subscriptionId: sub.id, accountId, reason }, metadata: { actor: accountId },
    }]);
  }

  /** Deletes the subscription of a triple; returns its id. */
  async deleteByTriple(accountId: string, t: SubscriptionTriple): Promise<string> {
    const row = this.rt.queries.subscriptionByTriple(accountId, t.emitterId, t.listenerId, t.eventName);
    if (!row) throw new NotFoundError(`subscription of ${t.emitterId} to ${t.listenerId}${t.eventName ? ` on ${t.eventName}` : ''}`);
    await this.delete(accountId, row.id);
    return row.id;
  }

  /** Subscribes a webhook to every source the account deploys from now on; idempotent per pair. */
  async createAuto(accountId: string, t: Omit<SubscriptionTriple, 'emitterId'>): Promise<string> {
    this.rt.assertWritable();
    // Webhooks only: a deleted webhook takes its auto-subscriptions with it, a deleted source or
    // workflow would leave one that fails every later deploy.
    if (!t.listenerId.startsWith('wh_')) {
      throw new InvalidFieldsError([{ field: 'listener_id', message: 'auto-subscriptions take a webhook id (wh_...); subscribe sources and workflows one by one' }]);
    }
    this.checkListener(accountId, t.listenerId);
    const id = autoSubscriptionId(accountId, t.listenerId, t.eventName);
    if (this.rt.queries.autoSubscriptions(accountId).some((a) => a.id === id)) return id;
    try {
      await this.rt.appendAndProject(Streams.autoSubscription(id), [{
        type: EventTypes.autoSubscriptionCreated,
        data: { autoSubscriptionId: id, accountId, listenerId: t.listenerId, eventName: t.eventName },
        metadata: { actor: accountId },
      }], 'no_stream');
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError)) throw err;
    }
    return id;
  }

  /** A webhook, source or workflow of the account; another account's is "not found", like an unknown id. */
  private checkListener(accountId: string, listenerId: string): void {
    let owned: boolean;
    if (listenerId.startsWith('wh_')) owned = this.rt.queries.webhook(listenerId)?.account_id === accountId;
    else if (listenerId.startsWith('dc_')) owned = this.ownsSource(accountId, listenerId);
    else if (listenerId.startsWith('p_')) owned = this.ownsWorkflow(accountId, listenerId);
    else throw new InvalidFieldsError([{ field: 'listener_id', message: 'must be a webhook (wh_...), a source (dc_...) or a workflow (p_...) id' }]);
    if (!owned) throw new NotFoundError(`listener_id ${listenerId}`, 'listener_id');
  }

  /** A source of the account that is not deleted. */
  private ownsSource(accountId: string, sourceId: string): boolean {
    const src = this.rt.queries.source(sourceId);
    return src !== undefined && src.account_id === accountId && src.status !== 'deleted';
  }

  private ownsWorkflow(accountId: string, workflowId: string): boolean {
    return this.rt.queries.workflow(workflowId)?.account_id === accountId;
  }
}
