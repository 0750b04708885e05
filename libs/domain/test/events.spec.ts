import type { StoredEvent } from '@app/event-store';
import { asSluiceEvent, asSourceStreamEvent, event, EventTypes, isEventType, NewSluiceEvent } from '@app/domain';

const stored = (type: string, data: unknown): StoredEvent => ({
  type, data, id: 'e1', streamName: 's', revision: 0n, position: 1n, metadata: { at: 1 },
});

describe('typed events', () => {
  it('event() builds the event its type names, with metadata and id only when given', () => {
    expect(event(EventTypes.webhookDeleted, { webhookId: 'wh_1', accountId: 'u_1' }))
      .toEqual({ type: 'webhook.deleted.v1', data: { webhookId: 'wh_1', accountId: 'u_1' } });
    expect(event(EventTypes.sourceDeployed, { sourceId: 'dc_1' }, { actor: 'u_1' }, 'id-1'))
      .toEqual({ type: 'source.deployed.v1', data: { sourceId: 'dc_1' }, metadata: { actor: 'u_1' }, id: 'id-1' });
  });

  it('the compiler refuses a payload that does not match its type string', () => {
    // @ts-expect-error `webhook.deleted.v1` needs an accountId (checked by `npx tsc --noEmit`, which covers this file)
    const drifted: NewSluiceEvent = { type: EventTypes.webhookDeleted, data: { webhookId: 'wh_1' } };
    // @ts-expect-error a run's trigger is one of four words
    event(EventTypes.sourceRunCompleted, { sourceId: 'dc_1', runId: 'r', trigger: 'cron', ok: true, logs: [], emitted: 0, durationMs: 1 });
    expect(drifted.type).toBe('webhook.deleted.v1');
  });

  it('asSluiceEvent narrows known types and skips unknown ones', () => {
    const known = asSluiceEvent(stored('source.deployed.v1', { sourceId: 'dc_1' }));
    expect(known?.type === EventTypes.sourceDeployed && known.data.sourceId).toBe('dc_1');
    expect(asSluiceEvent(stored('source.from_the_future.v9', {}))).toBeUndefined();
    expect(isEventType('toString')).toBe(false);
  });

  it('asSourceStreamEvent keeps only events of a source stream (an inbox request is not one)', () => {
    expect(asSourceStreamEvent(stored('source.db_set.v1', { sourceId: 'dc_1', key: 'k', value: 1 }))).toBeDefined();
    expect(asSourceStreamEvent(stored('source.http_request_received.v1', {}))).toBeUndefined();
    expect(asSourceStreamEvent(stored('webhook.deleted.v1', {}))).toBeUndefined();
  });
});
