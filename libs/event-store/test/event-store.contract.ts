import { randomUUID } from 'node:crypto';
import {
  DuplicateEventIdError,
  StoreUnavailableError,
  uuidv7,
  WrongExpectedRevisionError,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type StoredEvent,
} from '@app/event-store';

/** What a contract factory returns: a store and how to dispose of it, with the store's promises. */
export interface EventStoreContractSubject {
  store: EventStore;
  /** Closes the store and removes what the factory created. */
  cleanup(): Promise<void>;
  /** Each factory call gives an empty store whose positions start at 1 and have no gaps (embedded stores). */
  gapFree?: boolean;
  /** Event ids are unique across the whole store, not only per stream. */
  uniqueEventIds?: boolean;
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function event(type: string, data: unknown = {}, id?: string): NewEvent {
  return id === undefined ? { type, data } : { id, type, data };
}

function numbered(count: number, type = 'test.numbered.v1'): NewEvent[] {
  return Array.from({ length: count }, (_, n) => event(type, { n }));
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject');
}

function expectStrictlyIncreasing(positions: bigint[]): void {
  for (let i = 1; i < positions.length; i++) expect(positions[i]).toBeGreaterThan(positions[i - 1]);
}

function expectConsecutive(positions: bigint[]): void {
  for (let i = 1; i < positions.length; i++) expect(positions[i]).toBe(positions[i - 1] + 1n);
}

/**
 * The behaviour every EventStore adapter must have. Streams are named with a random prefix per
 * test, so the suite also runs against a shared server that holds other data.
 */
export function describeEventStoreContract(
  name: string,
  factory: () => Promise<EventStoreContractSubject>,
): void {
  describe(`${name}: EventStore contract`, () => {
    let subject: EventStoreContractSubject;
    let store: EventStore;
    let prefix: string;
    const stream = (suffix: string) => `${prefix}-${suffix}`;
    const ours = (events: StoredEvent[]) => events.filter((e) => e.streamName.startsWith(`${prefix}-`));

    beforeEach(async () => {
      subject = await factory();
      store = subject.store;
      prefix = `contract_${randomUUID().slice(0, 8)}`;
    });

    afterEach(async () => {
      await subject.cleanup();
    });

    describe('append and readStream', () => {
      it('appends events with 0-based revisions and reads them back in order', async () => {
        const s = stream('order');
        await store.append(s, [event('a.v1', { x: 1 }), event('b.v1', { x: 2 })]);
        await store.append(s, [event('c.v1', { x: 3 })]);

        const events = await store.readStream(s);
        expect(events.map((e) => [e.type, e.revision, e.streamName, e.data])).toEqual([
          ['a.v1', 0n, s, { x: 1 }],
          ['b.v1', 1n, s, { x: 2 }],
          ['c.v1', 2n, s, { x: 3 }],
        ]);
        expectStrictlyIncreasing(events.map((e) => e.position));
      });

      it('returns the revision and the position of the last appended event', async () => {
        const s = stream('result');
        const first = await store.append(s, numbered(3));
        const second = await store.append(s, numbered(2));

        const events = await store.readStream(s);
        expect(first).toEqual({ nextExpectedRevision: 2n, position: events[2].position });
        expect(second).toEqual({ nextExpectedRevision: 4n, position: events[4].position });
      });

      it('keeps given ids, lower-cased, and generates UUIDv7 ids when absent', async () => {
        const s = stream('ids');
        const given = randomUUID();
        await store.append(s, [event('given.v1', {}, given.toUpperCase()), event('generated.v1')]);

        const [withId, generated] = await store.readStream(s);
        expect(withId.id).toBe(given);
        expect(generated.id).toMatch(UUID_V7);
      });

      it('gives [] and revision -1 for a stream that does not exist', async () => {
        expect(await store.readStream(stream('missing'))).toEqual([]);
        expect(await store.streamRevision(stream('missing'))).toBe(-1n);
      });

      it('reports the revision of the last event of a stream', async () => {
        const s = stream('revision');
        await store.append(s, numbered(1));
        expect(await store.streamRevision(s)).toBe(0n);
        await store.append(s, numbered(4));
        expect(await store.streamRevision(s)).toBe(4n);
      });

      it('reads a stream from a revision, inclusive, and at most maxCount events', async () => {
        const s = stream('range');
        await store.append(s, numbered(10));

        const fromThree = await store.readStream(s, { fromRevision: 3n });
        expect(fromThree.map((e) => e.revision)).toEqual([3n, 4n, 5n, 6n, 7n, 8n, 9n]);
        const window = await store.readStream(s, { fromRevision: 2n, maxCount: 3 });
        expect(window.map((e) => (e.data as { n: number }).n)).toEqual([2, 3, 4]);
        expect(await store.readStream(s, { maxCount: 2 })).toHaveLength(2);
        expect(await store.readStream(s, { maxCount: 0 })).toEqual([]);
        expect(await store.readStream(s, { fromRevision: 10n })).toEqual([]);
      });

      it('keeps streams apart', async () => {
        await store.append(stream('left'), [event('left.v1')]);
        await store.append(stream('right'), [event('right.v1'), event('right.v1')]);

        expect((await store.readStream(stream('left'))).map((e) => e.type)).toEqual(['left.v1']);
        expect(await store.streamRevision(stream('right'))).toBe(1n);
      });

      it('rejects an empty append, an event without type and an id that is not a UUID, writing nothing', async () => {
        const s = stream('invalid');
        await expect(store.append(s, [])).rejects.toThrow(RangeError);
        await expect(store.append(s, [{ type: '', data: {} }])).rejects.toThrow(TypeError);
        await expect(store.append(s, [event('ok.v1'), event('bad.v1', {}, 'not-a-uuid')])).rejects.toThrow(TypeError);
        // Near misses: a non-hex digit, a dash out of place, one character short or long, a number.
        const near = ['0191a2b3-c4d6-8123-9456-789abcdef01g', '0191a2b3c-4d6-8123-9456-789abcdef012', '0191a2b3-c4d6-8123-9456-789abcdef01',
          '0191a2b3-c4d6-8123-9456-789abcdef0123', 42 as unknown as string];
        for (const id of near) await expect(store.append(s, [event('bad.v1', {}, id)])).rejects.toThrow(TypeError);
        expect(await store.readStream(s)).toEqual([]);
      });

      it('stores an id given in upper case in lower case, as EventStoreDB returns it', async () => {
        const s = stream('upper');
        await store.append(s, [event('upper.v1', {}, '0191A2B3-C4D6-8123-9456-789ABCDEF012')]);
        expect((await store.readStream(s)).map((e) => e.id)).toEqual(['0191a2b3-c4d6-8123-9456-789abcdef012']);
      });

      it('round-trips metadata and stamps `at` when it is absent', async () => {
        const s = stream('metadata');
        const before = Date.now();
        await store.append(s, [
          {
            type: 'with.v1',
            data: {},
            metadata: { correlationId: 'corr-1', causationId: 'cause-1', actor: 'u_42', at: 1_700_000_000_000 },
          },
          { type: 'stamped.v1', data: {}, metadata: { actor: 'system' } },
          { type: 'bare.v1', data: {} },
        ]);
        const after = Date.now();

        const [withAll, stamped, bare] = await store.readStream(s);
        expect(withAll.metadata).toEqual({
          correlationId: 'corr-1',
          causationId: 'cause-1',
          actor: 'u_42',
          at: 1_700_000_000_000,
        });
        expect(stamped.metadata.actor).toBe('system');
        for (const e of [stamped, bare]) {
          expect(e.metadata.at).toBeGreaterThanOrEqual(before);
          expect(e.metadata.at).toBeLessThanOrEqual(after);
        }
      });

      it('round-trips JSON data: nesting, arrays, unicode, escapes, numbers, null', async () => {
        const s = stream('json');
        const data = {
          text: 'héllo wörld – 日本語 – emoji 🚀👩‍💻 – rtl עברית',
          escapes: 'quote " backslash \\ newline \n tab \t nul-free',
          nested: { deep: { deeper: { list: [1, 'two', { three: 3 }, [4]], empty: {}, none: null } } },
          numbers: [0, -1, 3.14159, 1e21, Number.MAX_SAFE_INTEGER],
          flags: [true, false],
          '键 with spaces': 'value',
        };
        await store.append(s, [event('json.v1', data), event('array.v1', [1, 2, 3]), event('string.v1', 'plain')]);

        const events = await store.readStream(s);
        expect(events.map((e) => e.data)).toEqual([data, [1, 2, 3], 'plain']);
      });

      it('does not share objects with the caller', async () => {
        const s = stream('copy');
        const data = { list: [1] };
        await store.append(s, [event('copy.v1', data)]);
        data.list.push(2);

        const [first] = await store.readStream(s);
        expect(first.data).toEqual({ list: [1] });
        (first.data as { list: number[] }).list.push(3);
        expect((await store.readStream(s))[0].data).toEqual({ list: [1] });
      });
    });

    describe('expected revision', () => {
      it('defaults to any', async () => {
        const s = stream('default');
        await store.append(s, numbered(1));
        await expect(store.append(s, numbered(1))).resolves.toMatchObject({ nextExpectedRevision: 1n });
      });

      it('no_stream: succeeds on a new stream and fails on an existing one', async () => {
        const s = stream('no-stream');
        await expect(store.append(s, numbered(2), { expectedRevision: 'no_stream' })).resolves.toMatchObject({
          nextExpectedRevision: 1n,
        });

        const error = await rejectionOf(store.append(s, numbered(1), { expectedRevision: 'no_stream' }));
        expect(error).toBeInstanceOf(WrongExpectedRevisionError);
        expect(error).toMatchObject({ stream: s, expected: 'no_stream', actual: 1n, code: 'wrong_expected_revision' });
        expect(await store.streamRevision(s)).toBe(1n);
      });

      it('stream_exists: fails on a new stream with actual -1 and succeeds on an existing one', async () => {
        const s = stream('exists');
        const error = await rejectionOf(store.append(s, numbered(1), { expectedRevision: 'stream_exists' }));
        expect(error).toBeInstanceOf(WrongExpectedRevisionError);
        expect(error).toMatchObject({ stream: s, expected: 'stream_exists', actual: -1n });
        expect(await store.readStream(s)).toEqual([]);

        await store.append(s, numbered(1));
        await expect(store.append(s, numbered(1), { expectedRevision: 'stream_exists' })).resolves.toMatchObject({
          nextExpectedRevision: 1n,
        });
      });

      it('any: succeeds whether the stream exists or not', async () => {
        const s = stream('any');
        await expect(store.append(s, numbered(1), { expectedRevision: 'any' })).resolves.toMatchObject({
          nextExpectedRevision: 0n,
        });
        await expect(store.append(s, numbered(1), { expectedRevision: 'any' })).resolves.toMatchObject({
          nextExpectedRevision: 1n,
        });
      });

      it('an exact revision succeeds when it is the last one and fails when behind or ahead, writing nothing', async () => {
        const s = stream('exact');
        await store.append(s, numbered(3));

        const behind = await rejectionOf(store.append(s, numbered(1), { expectedRevision: 1n }));
        expect(behind).toBeInstanceOf(WrongExpectedRevisionError);
        expect(behind).toMatchObject({ stream: s, expected: 1n, actual: 2n });
        const ahead = await rejectionOf(store.append(s, numbered(1), { expectedRevision: 7n }));
        expect(ahead).toMatchObject({ expected: 7n, actual: 2n });
        const missing = await rejectionOf(store.append(stream('exact-missing'), numbered(1), { expectedRevision: 0n }));
        expect(missing).toMatchObject({ expected: 0n, actual: -1n });
        expect(await store.streamRevision(s)).toBe(2n);

        await expect(store.append(s, numbered(2), { expectedRevision: 2n })).resolves.toMatchObject({
          nextExpectedRevision: 4n,
        });
      });

      it('a conflict error is an Error whose message names the stream', async () => {
        const s = stream('message');
        await store.append(s, numbered(1));
        const error = await rejectionOf(store.append(s, numbered(1), { expectedRevision: 'no_stream' }));
        expect(error).toBeInstanceOf(Error);
        expect((error as Error).message).toContain(s);
      });
    });

    describe('idempotent retries', () => {
      const variants: Array<[string, (current: bigint) => ExpectedRevision, boolean]> = [
        ['an exact revision', (current) => current, true],
        ['no_stream', () => 'no_stream', false],
        ['stream_exists', () => 'stream_exists', true],
        ['any', () => 'any', false],
      ];

      it.each(variants)('a retry with %s returns the original result and writes nothing', async (_, expectedOf, needsStream) => {
        const s = stream('retry');
        if (needsStream) await store.append(s, numbered(2));
        const expectedRevision = expectedOf(await store.streamRevision(s));
        const batch = [event('x.v1', { n: 1 }, uuidv7()), event('y.v1', { n: 2 }, uuidv7())];

        const original = await store.append(s, batch, { expectedRevision });
        const retried = await store.append(s, batch, { expectedRevision });

        expect(retried).toEqual(original);
        const events = await store.readStream(s);
        expect(events).toHaveLength(needsStream ? 4 : 2);
        expect(events.slice(-2).map((e) => e.id)).toEqual(batch.map((e) => e.id));
      });

      it('a retry returns the original result after later appends to the stream', async () => {
        const s = stream('late-retry');
        const batch = [event('x.v1', {}, uuidv7())];
        const original = await store.append(s, batch, { expectedRevision: 'no_stream' });
        await store.append(s, numbered(3));

        await expect(store.append(s, batch, { expectedRevision: 'no_stream' })).resolves.toEqual(original);
        await expect(store.append(s, batch, { expectedRevision: 'any' })).resolves.toEqual(original);
        expect(await store.streamRevision(s)).toBe(3n);
      });

      it('new ids with a stale expected revision still conflict', async () => {
        const s = stream('stale');
        await store.append(s, [event('x.v1', {}, uuidv7())], { expectedRevision: 'no_stream' });
        await expect(store.append(s, [event('x.v1', {}, uuidv7())], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(
          WrongExpectedRevisionError,
        );
      });

      it('an id reused in another stream fails with DuplicateEventIdError when ids are unique store-wide, else is appended', async () => {
        const id = uuidv7();
        await store.append(stream('owner'), [event('x.v1', {}, id)]);
        const reuse = store.append(stream('other'), [event('y.v1'), event('x.v1', {}, id)], {
          expectedRevision: 'no_stream',
        });
        if (subject.uniqueEventIds) {
          const error = await rejectionOf(reuse);
          expect(error).toBeInstanceOf(DuplicateEventIdError);
          expect(error).toMatchObject({ eventId: id, code: 'duplicate_event_id' });
          expect(await store.readStream(stream('other'))).toEqual([]);
        } else {
          await expect(reuse).resolves.toMatchObject({ nextExpectedRevision: 1n });
        }
      });
    });

    describe('concurrent appends', () => {
      it('one conflicting append among 20 issued at once fails alone while the others commit', async () => {
        const names = Array.from({ length: 20 }, (_, i) => stream(`group-${i}`));
        for (const s of names) await store.append(s, numbered(1));
        const head = await store.headPosition();

        const settled = await Promise.allSettled(
          names.map((s, i) =>
            store.append(s, [event('grouped.v1', { i })], { expectedRevision: i === 7 ? 5n : 0n }),
          ),
        );

        settled.forEach((outcome, i) => {
          if (i === 7) {
            expect(outcome.status).toBe('rejected');
            const reason = (outcome as PromiseRejectedResult).reason;
            expect(reason).toBeInstanceOf(WrongExpectedRevisionError);
            expect(reason).toMatchObject({ stream: names[7], expected: 5n, actual: 0n });
          } else {
            expect(outcome).toMatchObject({ status: 'fulfilled', value: { nextExpectedRevision: 1n } });
          }
        });
        for (const [i, s] of names.entries()) {
          expect(await store.streamRevision(s)).toBe(i === 7 ? 0n : 1n);
        }
        const appended = ours(await store.readAll({ after: head }));
        expect(appended).toHaveLength(19);
        expectStrictlyIncreasing(appended.map((e) => e.position));
        if (subject.gapFree) {
          expect(appended.map((e) => e.position)).toEqual(Array.from({ length: 19 }, (_, i) => head + 1n + BigInt(i)));
        }
      });

      it('a failing multi-event append writes none of its events while the others of its group commit', async () => {
        const taken = uuidv7();
        await store.append(stream('taken'), [event('x.v1', {}, taken)]);
        await store.append(stream('conflict'), numbered(1));

        const appends: Array<Promise<AppendResult>> = [
          store.append(stream('before'), numbered(3)),
          store.append(stream('conflict'), numbered(3), { expectedRevision: 'no_stream' }),
          store.append(stream('after'), numbered(3)),
        ];
        if (subject.uniqueEventIds) {
          appends.push(store.append(stream('collides'), [event('a.v1'), event('b.v1', {}, taken), event('c.v1')]));
        }
        const settled = await Promise.allSettled(appends);

        expect(settled.map((outcome) => outcome.status)).toEqual(
          subject.uniqueEventIds
            ? ['fulfilled', 'rejected', 'fulfilled', 'rejected']
            : ['fulfilled', 'rejected', 'fulfilled'],
        );
        expect(await store.streamRevision(stream('before'))).toBe(2n);
        expect(await store.streamRevision(stream('after'))).toBe(2n);
        expect(await store.streamRevision(stream('conflict'))).toBe(0n);
        expect(await store.readStream(stream('collides'))).toEqual([]);
        if (subject.gapFree) {
          expectConsecutive((await store.readAll()).map((e) => e.position));
        }
      });

      it('of 10 appends with the same expected revision, exactly one wins', async () => {
        const s = stream('race');
        await store.append(s, numbered(1));

        const settled = await Promise.allSettled(
          Array.from({ length: 10 }, (_, i) => store.append(s, [event('racer.v1', { i })], { expectedRevision: 0n })),
        );

        const winners = settled.filter((outcome) => outcome.status === 'fulfilled');
        expect(winners).toHaveLength(1);
        for (const outcome of settled) {
          if (outcome.status === 'rejected') {
            expect(outcome.reason).toBeInstanceOf(WrongExpectedRevisionError);
            expect(outcome.reason).toMatchObject({ expected: 0n, actual: 1n });
          }
        }
        expect(await store.readStream(s)).toHaveLength(2);
      });

      it('of 5 appends creating the same stream with no_stream, exactly one wins', async () => {
        const s = stream('create-race');
        const settled = await Promise.allSettled(
          Array.from({ length: 5 }, () => store.append(s, numbered(2), { expectedRevision: 'no_stream' })),
        );
        expect(settled.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
        expect(await store.readStream(s)).toHaveLength(2);
      });

      it('appends issued at once to one stream with any all commit, with distinct revisions', async () => {
        const s = stream('pile');
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.append(s, [event('pile.v1', { i })])),
        );
        expect(new Set(results.map((r) => r.nextExpectedRevision)).size).toBe(20);
        const events = await store.readStream(s);
        expect(events.map((e) => e.revision)).toEqual(Array.from({ length: 20 }, (_, i) => BigInt(i)));
        expectStrictlyIncreasing(events.map((e) => e.position));
      });
    });

    describe('readAll and headPosition', () => {
      it('reads every stream in position order; after is exclusive and maxCount limits', async () => {
        const head = await store.headPosition();
        await store.append(stream('a'), [event('a1.v1')]);
        await store.append(stream('b'), [event('b1.v1'), event('b2.v1')]);
        await store.append(stream('a'), [event('a2.v1')]);

        const all = ours(await store.readAll({ after: head }));
        expect(all.map((e) => e.type)).toEqual(['a1.v1', 'b1.v1', 'b2.v1', 'a2.v1']);
        expect(all.map((e) => [e.streamName, e.revision])).toEqual([
          [stream('a'), 0n],
          [stream('b'), 0n],
          [stream('b'), 1n],
          [stream('a'), 1n],
        ]);
        expectStrictlyIncreasing(all.map((e) => e.position));

        const afterSecond = ours(await store.readAll({ after: all[1].position }));
        expect(afterSecond.map((e) => e.type)).toEqual(['b2.v1', 'a2.v1']);
        const limited = await store.readAll({ after: head, maxCount: 2 });
        expect(limited).toHaveLength(2);
        expect(await store.readAll({ after: head, maxCount: 0 })).toEqual([]);
      });

      it('pages of after + maxCount put the whole log back together', async () => {
        const head = await store.headPosition();
        for (let i = 0; i < 5; i++) await store.append(stream(`page-${i % 2}`), numbered(5));

        const whole = ours(await store.readAll({ after: head }));
        const paged: StoredEvent[] = [];
        let after = head;
        for (;;) {
          const page = await store.readAll({ after, maxCount: 4 });
          if (page.length === 0) break;
          expect(page.length).toBeLessThanOrEqual(4);
          paged.push(...page);
          after = page[page.length - 1].position;
        }
        expect(whole).toHaveLength(25);
        expect(ours(paged).map((e) => e.id)).toEqual(whole.map((e) => e.id));
      });

      it('the head is the position of the last appended event, and nothing is after it', async () => {
        const result = await store.append(stream('head'), numbered(3));
        const head = await store.headPosition();
        expect(head).toBeGreaterThanOrEqual(result.position);
        if (subject.gapFree) expect(head).toBe(result.position);
        expect(await store.readAll({ after: head })).toEqual([]);
      });

      it('positions are strictly increasing, and 1, 2, 3... without gaps in a gap-free store', async () => {
        const initialHead = await store.headPosition();
        if (subject.gapFree) expect(initialHead).toBe(0n);
        await store.append(stream('p1'), numbered(2));
        await expect(store.append(stream('p1'), numbered(1), { expectedRevision: 'no_stream' })).rejects.toThrow();
        await Promise.all([store.append(stream('p2'), numbered(3)), store.append(stream('p3'), numbered(1))]);
        const first = await store.append(stream('p4'), numbered(1));

        const positions = ours(await store.readAll({ after: initialHead })).map((e) => e.position);
        expect(positions).toHaveLength(7);
        expectStrictlyIncreasing(positions);
        if (subject.gapFree) {
          expect(positions).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n]);
          expect(first.position).toBe(7n);
          expect(await store.headPosition()).toBe(7n);
        }
      });
    });

    describe('subscribeToAll', () => {
      it('hands over past events from the checkpoint, then live ones, in order, without gaps or duplicates', async () => {
        const head = await store.headPosition();
        await store.append(stream('past'), numbered(30));
        const batches: StoredEvent[][] = [];
        const subscription = store.subscribeToAll((batch) => void batches.push(batch), { after: head, maxBatch: 8 });
        await subscription.caughtUp();
        expect(ours(batches.flat())).toHaveLength(30);

        await store.append(stream('live'), numbered(5));
        await store.append(stream('past'), numbered(5));
        await subscription.caughtUp();
        await subscription.stop();

        const delivered = batches.flat();
        const expected = await store.readAll({ after: head });
        expect(ours(delivered).map((e) => e.id)).toEqual(ours(expected).map((e) => e.id));
        expectStrictlyIncreasing(delivered.map((e) => e.position));
        expect(new Set(delivered.map((e) => e.id)).size).toBe(delivered.length);
        for (const batch of batches) expect(batch.length).toBeLessThanOrEqual(8);
        if (subject.gapFree) expectConsecutive([head, ...delivered.map((e) => e.position)]);
      });

      it('from 0 hands over the whole log', async () => {
        await store.append(stream('whole'), numbered(12));
        const delivered: StoredEvent[] = [];
        const subscription = store.subscribeToAll((batch) => void delivered.push(...batch));
        await subscription.caughtUp();
        await subscription.stop();

        expect(ours(delivered).map((e) => (e.data as { n: number }).n)).toEqual(Array.from({ length: 12 }, (_, n) => n));
        if (subject.gapFree) expect(delivered[0].position).toBe(1n);
      });

      it('from a checkpoint hands over only events strictly after it', async () => {
        const head = await store.headPosition();
        await store.append(stream('checkpoint'), numbered(10));
        const events = ours(await store.readAll({ after: head }));
        const checkpoint = events.find((e) => e.streamName === stream('checkpoint') && e.revision === 3n)!.position;

        const delivered: StoredEvent[] = [];
        const subscription = store.subscribeToAll((batch) => void delivered.push(...batch), { after: checkpoint });
        await subscription.caughtUp();
        await subscription.stop();

        expect(ours(delivered).map((e) => e.revision)).toEqual([4n, 5n, 6n, 7n, 8n, 9n]);
        expect(delivered.every((e) => e.position > checkpoint)).toBe(true);
      });

      it('awaits each batch before handing over the next', async () => {
        const head = await store.headPosition();
        let running = 0;
        let overlapped = false;
        const sizes: number[] = [];
        const subscription = store.subscribeToAll(
          async (batch) => {
            running++;
            if (running > 1) overlapped = true;
            sizes.push(batch.length);
            await delay(2);
            running--;
          },
          { after: head, maxBatch: 7 },
        );
        for (let i = 0; i < 5; i++) await store.append(stream('slow'), numbered(10));
        await subscription.caughtUp();
        await subscription.stop();

        expect(overlapped).toBe(false);
        expect(sizes.every((size) => size <= 7)).toBe(true);
        expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(50);
      });

      it('caughtUp() resolves only once the handler has finished every event appended before the call', async () => {
        const head = await store.headPosition();
        const finished: StoredEvent[] = [];
        const subscription = store.subscribeToAll(
          async (batch) => {
            await delay(3);
            finished.push(...batch);
          },
          { after: head, maxBatch: 5 },
        );
        const appends = [];
        for (let i = 0; i < 6; i++) appends.push(store.append(stream(`caught-${i}`), numbered(4)));
        const results = await Promise.all(appends);

        await subscription.caughtUp();
        const last = results.reduce((max, r) => (r.position > max ? r.position : max), 0n);
        expect(ours(finished)).toHaveLength(24);
        expect(subscription.position).toBeGreaterThanOrEqual(last);
        await subscription.stop();
      });

      it('caughtUp() resolves for an idle subscription with nothing to hand over', async () => {
        const head = await store.headPosition();
        const subscription = store.subscribeToAll(() => undefined, { after: head });
        await subscription.caughtUp();
        expect(subscription.position).toBe(head);
        await subscription.stop();
      });

      it('position is the last event handed over and completed', async () => {
        const head = await store.headPosition();
        const subscription = store.subscribeToAll(() => undefined, { after: head });
        expect(subscription.position).toBe(head);
        const result = await store.append(stream('position'), numbered(3));
        await subscription.caughtUp();
        expect(subscription.position).toBeGreaterThanOrEqual(result.position);
        await subscription.stop();
      });

      it('stop() waits for the batch in progress, and nothing is handed over afterwards', async () => {
        const head = await store.headPosition();
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        let entered!: () => void;
        const handling = new Promise<void>((resolve) => (entered = resolve));
        let completed = 0;
        const delivered: StoredEvent[] = [];
        const subscription = store.subscribeToAll(
          async (batch) => {
            delivered.push(...batch);
            entered();
            await gate;
            completed++;
          },
          { after: head },
        );
        await store.append(stream('stop'), numbered(2));
        await handling;

        let stopped = false;
        const stopping = subscription.stop().then(() => (stopped = true));
        await delay(10);
        expect(stopped).toBe(false);
        release();
        await stopping;
        expect(completed).toBe(1);

        const count = delivered.length;
        await store.append(stream('stop'), numbered(3));
        await delay(50);
        expect(delivered).toHaveLength(count);
      });

      it('a failing handler stops the subscription, is reported to onError and makes caughtUp() reject', async () => {
        const head = await store.headPosition();
        const failure = new Error('handler broke');
        const reported: unknown[] = [];
        let calls = 0;
        const subscription = store.subscribeToAll(
          () => {
            calls++;
            throw failure;
          },
          { after: head, onError: (error) => reported.push(error) },
        );
        await store.append(stream('fail'), numbered(1));

        await expect(subscription.caughtUp()).rejects.toBe(failure);
        expect(reported).toEqual([failure]);
        await store.append(stream('fail'), numbered(1));
        await delay(30);
        expect(calls).toBe(1);
        expect(subscription.position).toBe(head);
        await subscription.stop();
      });

      it('several subscriptions receive the same events independently', async () => {
        const head = await store.headPosition();
        const fast: StoredEvent[] = [];
        const slow: StoredEvent[] = [];
        const first = store.subscribeToAll((batch) => void fast.push(...batch), { after: head });
        const second = store.subscribeToAll(
          async (batch) => {
            await delay(2);
            slow.push(...batch);
          },
          { after: head, maxBatch: 3 },
        );
        await Promise.all([store.append(stream('x'), numbered(10)), store.append(stream('y'), numbered(10))]);
        await Promise.all([first.caughtUp(), second.caughtUp()]);
        await Promise.all([first.stop(), second.stop()]);

        expect(ours(fast)).toHaveLength(20);
        expect(ours(slow).map((e) => e.id)).toEqual(ours(fast).map((e) => e.id));
      });
    });

    describe('close', () => {
      it('stops subscriptions, refuses appends with StoreUnavailableError and can be called twice', async () => {
        const head = await store.headPosition();
        const subscription = store.subscribeToAll(() => undefined, { after: head });
        await store.close();
        await subscription.stop();

        const error = await rejectionOf(store.append(stream('closed'), numbered(1)));
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect(error).toMatchObject({ code: 'store_unavailable' });
        await store.close();
      });
    });
  });
}
