import {
  StreamNotFoundError,
  UnavailableError,
  WrongExpectedVersionError,
  type AppendResult as ClientAppendResult,
  type EventStoreDBClient,
} from '@eventstore/db-client';
import { EventStoreDbEventStore, StoreUnavailableError, WrongExpectedRevisionError } from '@app/event-store';

/** A client read: an async iterable that can be cancelled, failing after its items when given an error. */
function read(items: unknown[], error?: Error) {
  return {
    cancel: jest.fn(async () => undefined),
    async *[Symbol.asyncIterator]() {
      yield* items;
      if (error) throw error;
    },
  };
}

function recorded(stream: string, revision: bigint, commit: bigint, type = 'test.v1') {
  return {
    event: {
      streamId: stream,
      id: `00000000-0000-7000-8000-${String(commit).padStart(12, '0')}`,
      revision,
      type,
      data: { revision: Number(revision) },
      metadata: { actor: 'system', at: 5 },
      isJson: true,
      created: new Date(1000),
      position: { commit, prepare: commit },
    },
  };
}

/** The mapping between the port and the client, checked without a server (the contract needs one). */
describe('EventStoreDbEventStore mapping', () => {
  const fake = {
    appendToStream: jest.fn<Promise<ClientAppendResult>, unknown[]>(),
    readStream: jest.fn(),
    readAll: jest.fn(),
    dispose: jest.fn(async () => undefined),
  };
  const store = new EventStoreDbEventStore({ client: fake as unknown as EventStoreDBClient });

  beforeEach(() => jest.clearAllMocks());

  it('sends JSON events with ids, metadata and the expected revision', async () => {
    fake.appendToStream.mockResolvedValue({ success: true, nextExpectedRevision: 3n, position: { commit: 90n, prepare: 90n } });
    const id = '0190a5c4-0000-7000-8000-000000000001';

    const result = await store.append('s', [{ id, type: 'x.v1', data: { a: 1 }, metadata: { at: 7 } }], {
      expectedRevision: 2n,
    });

    expect(result).toEqual({ nextExpectedRevision: 3n, position: 90n });
    expect(fake.appendToStream).toHaveBeenCalledWith(
      's',
      [{ id, contentType: 'application/json', type: 'x.v1', data: { a: 1 }, metadata: { at: 7 } }],
      { expectedRevision: 2n },
    );
  });

  it('reads the position back for an idempotent retry, which the server answers without one', async () => {
    fake.appendToStream.mockResolvedValue({ success: true, nextExpectedRevision: 4n, position: undefined });
    fake.readStream.mockReturnValue(read([recorded('s', 4n, 120n)]));

    await expect(store.append('s', [{ type: 'x.v1', data: {} }], { expectedRevision: 'no_stream' })).resolves.toEqual({
      nextExpectedRevision: 4n,
      position: 120n,
    });
    expect(fake.readStream).toHaveBeenCalledWith('s', expect.objectContaining({ fromRevision: 4n, maxCount: 1 }));
  });

  it('maps a wrong expected version to WrongExpectedRevisionError, no_stream as -1', async () => {
    fake.appendToStream.mockRejectedValue(
      new WrongExpectedVersionError(undefined, { streamName: 's', expected: 'stream_exists', current: 'no_stream' }),
    );
    await expect(store.append('s', [{ type: 'x.v1', data: {} }], { expectedRevision: 'stream_exists' })).rejects.toEqual(
      new WrongExpectedRevisionError('s', 'stream_exists', -1n),
    );

    fake.appendToStream.mockRejectedValue(
      new WrongExpectedVersionError(undefined, { streamName: 's', expected: 1n, current: 4n }),
    );
    const error = await store.append('s', [{ type: 'x.v1', data: {} }], { expectedRevision: 1n }).catch((e) => e);
    expect(error).toBeInstanceOf(WrongExpectedRevisionError);
    expect(error).toMatchObject({ stream: 's', expected: 1n, actual: 4n });
  });

  it('maps an unreachable server to StoreUnavailableError', async () => {
    fake.appendToStream.mockRejectedValue(new UnavailableError());
    await expect(store.append('s', [{ type: 'x.v1', data: {} }])).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('reads a missing stream as [] and revision -1', async () => {
    fake.readStream.mockImplementation(() => read([], new StreamNotFoundError(undefined, 's')));
    await expect(store.readStream('s')).resolves.toEqual([]);
    await expect(store.streamRevision('s')).resolves.toBe(-1n);
  });

  it('maps recorded events: commit position, metadata, and `at` from created when absent', async () => {
    const plain = recorded('s', 0n, 10n);
    const bare = recorded('s', 1n, 20n);
    (bare.event as { metadata?: unknown }).metadata = undefined;
    fake.readStream.mockReturnValue(read([plain, bare]));

    const events = await store.readStream('s', { fromRevision: 0n });
    expect(events).toEqual([
      { id: plain.event.id, type: 'test.v1', streamName: 's', revision: 0n, position: 10n, data: { revision: 0 }, metadata: { actor: 'system', at: 5 } },
      { id: bare.event.id, type: 'test.v1', streamName: 's', revision: 1n, position: 20n, data: { revision: 1 }, metadata: { at: 1000 } },
    ]);
  });

  it('leaves system events out of readAll, skips the start position and pages until maxCount', async () => {
    fake.readAll.mockReturnValueOnce(
      read([recorded('s', 0n, 50n), recorded('$stats', 0n, 60n, '$statsCollected'), recorded('s', 1n, 70n), recorded('t', 0n, 80n)]),
    );

    const events = await store.readAll({ after: 50n, maxCount: 2 });
    expect(events.map((e) => e.position)).toEqual([70n, 80n]);
    expect(fake.readAll).toHaveBeenCalledWith(expect.objectContaining({ fromPosition: { commit: 50n, prepare: 50n } }));
  });

  it('takes the head from the last application event, skipping system events at the end', async () => {
    fake.readAll.mockReturnValueOnce(read([recorded('$stats', 3n, 99n, '$statsCollected'), recorded('s', 2n, 90n)]));
    await expect(store.headPosition()).resolves.toBe(90n);
  });

  it('refuses appends once closed', async () => {
    await store.close();
    expect(fake.dispose).toHaveBeenCalledTimes(1);
    await expect(store.append('s', [{ type: 'x.v1', data: {} }])).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
