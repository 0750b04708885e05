import { EventStoreDbEventStore } from '@app/event-store';
import { describeEventStoreContract } from './event-store.contract';

const url = process.env.EVENTSTORE_URL;
if (!url) {
  console.warn('EventStoreDB contract skipped: set EVENTSTORE_URL=esdb://host:2113?tls=false to run it');
}

(url ? describe : describe.skip)('EventStoreDbEventStore against EVENTSTORE_URL', () => {
  describeEventStoreContract('EventStoreDbEventStore', async () => {
    const store = new EventStoreDbEventStore({ connectionString: url! });
    return { store, cleanup: () => store.close() };
  });
});
