import type { EventStore, NewEvent, StoredEvent } from '@app/event-store';
import { uuidv5like } from '@app/event-store';
import { DeliveryScheduled, EventTypes, SourceEventEmitted, Streams } from '@app/domain';
import type { ReadModelQueries } from '@app/projections';
import type { ProcessorRunner } from '@app/processing';
import type { DeliverySender } from './delivery-sender';

const DELIVERY_NS = 'sluice.delivery';

/**
 * Checkpointed processor: every emitted event -> one `delivery.scheduled` per subscribed webhook.
 * Delivery ids derive from (emit id, webhook id), and ids already in the read model are skipped,
 * so a batch repeated after a crash schedules nothing twice. Subscriptions are read once the
 * read models have caught up with the emit, so a subscription created before an emit applies to it.
 */
export class DeliveryDispatcher {
  readonly name = 'delivery-dispatcher';
  readonly transactional = false as const;

  constructor(
    private readonly store: EventStore,
    private readonly queries: ReadModelQueries,
    private readonly projections: ProcessorRunner,
    private readonly sender: DeliverySender,
  ) {}

  async handle(events: StoredEvent[]): Promise<void> {
    const emits = events.filter((e) => e.type === EventTypes.sourceEventEmitted);
    if (emits.length === 0) return;
    await this.projections.waitFor(emits[emits.length - 1].position);
    const perWebhook = new Map<string, DeliveryScheduled[]>();
    for (const e of emits) {
      const d = e.data as SourceEventEmitted;
      const channel = d.meta.name ?? '';
      for (const sub of this.queries.subscriptionsFor(d.sourceId, d.accountId, channel)) {
        if (!sub.listener_id.startsWith('wh_')) continue;
        const deliveryId = uuidv5like(DELIVERY_NS, `${d.emitId}/${sub.listener_id}`);
        if (this.queries.delivery(deliveryId)) continue;
        const list = perWebhook.get(sub.listener_id) ?? [];
        list.push({
          deliveryId, webhookId: sub.listener_id, accountId: d.accountId, emitId: d.emitId, emitterId: d.sourceId,
          eventName: channel, body: JSON.stringify(d.event ?? null), subscriptionId: sub.id,
        });
        perWebhook.set(sub.listener_id, list);
      }
    }
    await Promise.all(
      [...perWebhook].map(async ([webhookId, list]) => {
        const events: NewEvent[] = list.map((s) => ({ id: s.deliveryId, type: EventTypes.deliveryScheduled, data: s }));
        await this.store.append(Streams.delivery(webhookId), events);
        for (const s of list) {
          this.sender.enqueue({
            deliveryId: s.deliveryId, webhookId, emitId: s.emitId, emitterId: s.emitterId, eventName: s.eventName, body: s.body, attempts: 0,
          });
        }
      }),
    );
  }
}
