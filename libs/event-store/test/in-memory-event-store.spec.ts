import { InMemoryEventStore } from '@app/event-store';
import { describeEventStoreContract } from './event-store.contract';

describeEventStoreContract('InMemoryEventStore', async () => {
  const store = new InMemoryEventStore();
  return { store, cleanup: () => store.close(), gapFree: true, uniqueEventIds: true };
});
