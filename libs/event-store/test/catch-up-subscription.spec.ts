import { CatchUpSubscription, type CatchUpSource, type StoredEvent } from '@app/event-store';

function storedEvent(position: number): StoredEvent {
  return {
    id: `00000000-0000-7000-8000-${String(position).padStart(12, '0')}`,
    type: 'test.v1',
    streamName: 's',
    revision: BigInt(position - 1),
    position: BigInt(position),
    data: {},
    metadata: { at: 0 },
  };
}

/** A source whose reads answer asynchronously, like a remote store, so appends can land mid-read. */
class SlowSource implements CatchUpSource {
  readonly log: StoredEvent[] = [];
  private readonly listeners = new Set<(head: bigint) => void>();
  onRead: () => void = () => undefined;

  append(count: number, notify = true): void {
    for (let i = 0; i < count; i++) this.log.push(storedEvent(this.log.length + 1));
    if (notify) for (const listener of this.listeners) listener(BigInt(this.log.length));
  }

  async readAll(after: bigint, maxCount: number): Promise<StoredEvent[]> {
    const page = this.log.slice(Number(after), Number(after) + maxCount);
    this.onRead();
    await new Promise((resolve) => setTimeout(resolve, 1));
    return page;
  }

  headPosition(): bigint {
    return BigInt(this.log.length);
  }

  onAppended(listener: (head: bigint) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

describe('CatchUpSubscription', () => {
  it('does not miss an append committed while an empty read is in flight', async () => {
    const source = new SlowSource();
    const delivered: StoredEvent[] = [];
    let reads = 0;
    source.onRead = () => {
      reads++;
      // The first read finds nothing; an append lands before its answer arrives.
      if (reads === 1) source.append(3);
    };
    const subscription = new CatchUpSubscription(source, (batch) => void delivered.push(...batch));

    await subscription.caughtUp();
    await subscription.stop();
    expect(delivered.map((e) => e.position)).toEqual([1n, 2n, 3n]);
  });

  it('once caught up, reads each notified commit once, without an empty read after it', async () => {
    const source = new SlowSource();
    source.append(2, false);
    let reads = 0;
    source.onRead = () => void reads++;
    const delivered: bigint[] = [];
    const subscription = new CatchUpSubscription(source, (batch) => void delivered.push(...batch.map((e) => e.position)));
    await subscription.caughtUp();
    // The catch-up from the checkpoint ends with an empty read.
    expect(reads).toBe(2);
    for (let i = 0; i < 3; i++) {
      source.append(1);
      while (delivered.length < 3 + i) await new Promise((resolve) => setImmediate(resolve));
      // Let the loop go on after the handler: an empty read would start (and be counted) now.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(delivered).toEqual([1n, 2n, 3n, 4n, 5n]);
    expect(reads).toBe(5);
    await subscription.stop();
  });

  it('reads a commit whose notification has not come yet when asked to catch up', async () => {
    const source = new SlowSource();
    const delivered: bigint[] = [];
    const subscription = new CatchUpSubscription(source, (batch) => void delivered.push(...batch.map((e) => e.position)));
    await subscription.caughtUp();
    source.append(1);
    await subscription.caughtUp();
    source.append(2, false);
    await subscription.caughtUp();
    expect(delivered).toEqual([1n, 2n, 3n]);
    await subscription.stop();
  });

  it('hands over batches of at most maxBatch in order and tracks the position', async () => {
    const source = new SlowSource();
    source.append(23, false);
    const sizes: number[] = [];
    const delivered: bigint[] = [];
    const subscription = new CatchUpSubscription(
      source,
      (batch) => {
        sizes.push(batch.length);
        delivered.push(...batch.map((e) => e.position));
      },
      { after: 2n, maxBatch: 10 },
    );

    await subscription.caughtUp();
    expect(sizes).toEqual([10, 10, 1]);
    expect(delivered).toEqual(Array.from({ length: 21 }, (_, i) => BigInt(i + 3)));
    expect(subscription.position).toBe(23n);
    await subscription.stop();
  });

  it('lets the batch in progress finish on stop and resolves pending caughtUp() calls', async () => {
    const source = new SlowSource();
    source.append(5, false);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const handling = new Promise<void>((resolve) => (entered = resolve));
    const subscription = new CatchUpSubscription(source, () => {
      entered();
      return gate;
    });
    await handling;

    const caughtUp = subscription.caughtUp();
    const stopped = subscription.stop();
    source.append(5);
    release();
    await expect(caughtUp).resolves.toBeUndefined();
    await stopped;
    expect(subscription.position).toBe(5n);
  });

  it('reports a failing read like a failing handler', async () => {
    const source = new SlowSource();
    const failure = new Error('disk gone');
    source.readAll = async () => {
      throw failure;
    };
    const errors: unknown[] = [];
    const subscription = new CatchUpSubscription(source, () => undefined, { onError: (e) => errors.push(e) });

    await expect(subscription.caughtUp()).rejects.toBe(failure);
    expect(errors).toEqual([failure]);
    await subscription.stop();
  });

  it('rejects a maxBatch that is not a positive integer', () => {
    expect(() => new CatchUpSubscription(new SlowSource(), () => undefined, { maxBatch: 0 })).toThrow(RangeError);
  });
});
