import { EventTypes, Streams } from '@app/domain';
import type { EngineRuntime } from '../engine-runtime';

/**
 * Records the deletion of each subscription in `ids` because what it named went away (a webhook
 * or a source), one event each so the audit trail says why. It does not wait for the read models:
 * the caller's own write follows and is waited for. Internal to the use cases.
 */
export async function cascadeDeleteSubscriptions(rt: EngineRuntime, accountId: string, ids: string[], reason: string): Promise<void> {
  for (const id of ids) {
    await rt.store.append(Streams.subscription(id), [{
      type: EventTypes.subscriptionDeleted, data: { subscriptionId: id, accountId, reason }, metadata: { actor: accountId },
    }]);
  }
}
