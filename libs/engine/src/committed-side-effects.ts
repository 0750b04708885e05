import type { StoredEvent } from '@app/event-store';
import { asSluiceEvent, EventTypes } from '@app/domain';

/** The engine chores that follow committed read models. */
export interface SideEffectTargets {
  /** Re-reads a source's timer (scheduled, changed or dropped). */
  refreshTimer(sourceId: string): void;
  /** Forgets a deleted source's actor. */
  dropActor(sourceId: string): void;
  /** Ends a deleted source's live streams (SSE of its emits and logs): their clients then get its 404. */
  endLiveStreams(sourceId: string): void;
  /** Sends whatever the delivery schedule holds that is due now. */
  enqueueDueDeliveries(): void;
}

/** Source events after which the source's timer may have to change. */
const TIMER_CHANGES: ReadonlySet<string> = new Set([
  EventTypes.sourceDeployed, EventTypes.sourceDeployFailed, EventTypes.sourceUpdated, EventTypes.sourceUpdateFailed,
  EventTypes.sourceDeleted, EventTypes.sourceDeleteFailed,
]);

/**
 * Runs the side effects of a batch of events whose read models just committed. Every chore that
 * used to be done by a request handler after its write is derived here from the write's events,
 * so it happens whoever appended them (HTTP, recovery after a crash, an admin command) and only
 * once the read models it reads are up to date.
 */
export function runCommittedSideEffects(events: StoredEvent[], targets: SideEffectTargets): void {
  const timers = new Set<string>();
  const deleted = new Set<string>();
  let deliveriesDue = false;
  for (const stored of events) {
    const e = asSluiceEvent(stored);
    if (!e) continue;
    if (TIMER_CHANGES.has(e.type) && 'sourceId' in e.data) timers.add(e.data.sourceId);
    if (e.type === EventTypes.sourceDeleted) deleted.add(e.data.sourceId);
    // A re-enabled webhook and a retry request make rows of the schedule due now.
    if ((e.type === EventTypes.webhookUpdated && e.data.active === true) || e.type === EventTypes.deliveryRetryRequested) deliveriesDue = true;
  }
  for (const id of deleted) {
    targets.dropActor(id);
    targets.endLiveStreams(id);
  }
  for (const id of timers) targets.refreshTimer(id);
  if (deliveriesDue) targets.enqueueDueDeliveries();
}
