import type { StoredEvent } from '@app/event-store';
import { EventTypes } from '@app/domain';
import { runCommittedSideEffects } from './committed-side-effects';

let position = 0n;
function committed(type: string, data: Record<string, unknown>): StoredEvent {
  position++;
  return { id: `e${position}`, type, streamName: 's', revision: 0n, position, data, metadata: { at: 0 } };
}

/** Given a committed batch, when its side effects run, then these chores are done (and no others). */
function chores(events: StoredEvent[]) {
  const done = { timers: [] as string[], dropped: [] as string[], ended: [] as string[], deliveriesDue: 0 };
  runCommittedSideEffects(events, {
    refreshTimer: (id) => done.timers.push(id),
    dropActor: (id) => done.dropped.push(id),
    endLiveStreams: (id) => done.ended.push(id),
    enqueueDueDeliveries: () => done.deliveriesDue++,
  });
  return done;
}

describe('side effects of committed events', () => {
  it('refreshes the timer of a source whose lifecycle changed, once per batch', () => {
    expect(chores([
      committed(EventTypes.sourceDeployRequested, { sourceId: 'dc_a' }),
      committed(EventTypes.sourceDeployed, { sourceId: 'dc_a' }),
      committed(EventTypes.sourceUpdated, { sourceId: 'dc_a' }),
      committed(EventTypes.sourceUpdateFailed, { sourceId: 'dc_b' }),
    ])).toEqual({ timers: ['dc_a', 'dc_b'], dropped: [], ended: [], deliveriesDue: 0 });
  });

  it('drops the actor of a deleted source, ends its live streams and unschedules its timer', () => {
    expect(chores([committed(EventTypes.sourceDeleted, { sourceId: 'dc_a', accountId: 'u_1' })]))
      .toEqual({ timers: ['dc_a'], dropped: ['dc_a'], ended: ['dc_a'], deliveriesDue: 0 });
  });

  it('sends due deliveries after a retry request or a webhook turned active, not after other webhook changes', () => {
    expect(chores([committed(EventTypes.deliveryRetryRequested, { deliveryId: 'd1', webhookId: 'wh_1' }),
      committed(EventTypes.deliveryRetryRequested, { deliveryId: 'd2', webhookId: 'wh_1' })]).deliveriesDue).toBe(1);
    expect(chores([committed(EventTypes.webhookUpdated, { webhookId: 'wh_1', active: true })]).deliveriesDue).toBe(1);
    expect(chores([committed(EventTypes.webhookUpdated, { webhookId: 'wh_1', active: false })]).deliveriesDue).toBe(0);
    expect(chores([committed(EventTypes.webhookUpdated, { webhookId: 'wh_1', name: 'x' })]).deliveriesDue).toBe(0);
  });

  it('does nothing for runs and emits', () => {
    expect(chores([
      committed(EventTypes.sourceRunCompleted, { sourceId: 'dc_a' }),
      committed(EventTypes.sourceEventEmitted, { sourceId: 'dc_a' }),
    ])).toEqual({ timers: [], dropped: [], ended: [], deliveriesDue: 0 });
  });
});
