import type { EventStore } from '@app/event-store';
import type { SecretBox, SluiceEvent } from '@app/domain';
import type { DeliveryRow, ReadModelQueries } from '@app/projections';
import { DeliverySender } from './delivery-sender';

const T0 = Date.parse('2025-03-01T09:00:00Z');

interface Row {
  id: string;
  at: number;
}

/**
 * The sender's schedule over an in-memory table of due times. `pollTakesMs` moves the clock
 * on while a poll reads its due rows, as a poll on a busy server does. The webhook is unknown,
 * so an attempt ends at once without sending: what is observed is what the sender takes.
 */
function harness(rows: Row[], pollTakesMs = 0) {
  const taken: string[] = [];
  const queries = {
    dueDeliveries: (now: number) => {
      const due = rows.filter((r) => r.at <= now && !taken.includes(r.id));
      if (pollTakesMs > 0) jest.setSystemTime(Date.now() + pollTakesMs);
      return due.map((r) => ({
        id: r.id, webhook_id: 'wh', account_id: 'u_1', emit_id: `e-${r.id}`, emitter_id: 'dc_1', event_name: '',
        status: 'pending', attempts: '[]', next_attempt_at: r.at, created_at: T0, pos: 1,
      }) as DeliveryRow);
    },
    nextDeliveryDueAfter: (now: number) => {
      const later = rows.filter((r) => r.at > now && !taken.includes(r.id)).map((r) => r.at);
      return later.length > 0 ? Math.min(...later) : undefined;
    },
    deliveryBody: () => '{}',
    webhook: () => undefined,
  } as unknown as ReadModelQueries;
  const sender = new DeliverySender({} as EventStore<SluiceEvent>, queries, {} as SecretBox, {
    retrySchedule: [0, 5], timeoutMs: 1000, egress: { allow: [] }, concurrencyPerWebhook: 4,
  });
  const enqueue = sender.enqueue.bind(sender);
  jest.spyOn(sender, 'enqueue').mockImplementation((job) => {
    taken.push(job.deliveryId);
    enqueue(job);
  });
  return { sender, taken };
}

describe('DeliverySender schedule', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('takes what is due at start and polls again at the next attempt time, not before', async () => {
    const { sender, taken } = harness([{ id: 'a', at: T0 - 10 }, { id: 'b', at: T0 + 2000 }]);
    sender.start();
    expect(taken).toEqual(['a']);
    await jest.advanceTimersByTimeAsync(1999);
    expect(taken).toEqual(['a']);
    await jest.advanceTimersByTimeAsync(1);
    expect(taken).toEqual(['a', 'b']);
    // Nothing left in the schedule: no timer is armed.
    expect(jest.getTimerCount()).toBe(0);
    await sender.stop();
  });

  it('a row that falls due while a poll runs is taken right after it (not left until other traffic)', async () => {
    // The poll reads its due rows at T0 and takes 5 ms; "c" falls due at T0 + 3, in between.
    const { sender, taken } = harness([{ id: 'a', at: T0 }, { id: 'c', at: T0 + 3 }], 5);
    sender.start();
    expect(taken).toEqual(['a']);
    await jest.advanceTimersByTimeAsync(0);
    expect(taken).toEqual(['a', 'c']);
    await jest.advanceTimersByTimeAsync(60 * 60_000);
    expect(taken).toEqual(['a', 'c']);
    await sender.stop();
  });

  it('a retry timer that fires late still finds a row due during its own poll', async () => {
    const { sender, taken } = harness([{ id: 'a', at: T0 + 100 }, { id: 'b', at: T0 + 104 }], 5);
    sender.start();
    expect(taken).toEqual([]);
    // The timer for "a" fires at T0 + 100; its poll ends at T0 + 105, after "b" fell due.
    await jest.advanceTimersByTimeAsync(100);
    expect(taken).toEqual(['a', 'b']);
    await sender.stop();
  });
});
