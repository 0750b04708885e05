import { InMemoryEventStore } from '../src/in-memory-event-store';
import { streamPages } from '../src/stream-pages';

async function pagesOf(store: InMemoryEventStore, stream: string, size: number, from?: bigint): Promise<number[][]> {
  const pages: number[][] = [];
  for await (const page of streamPages(store, stream, size, from)) pages.push(page.map((e) => (e.data as { n: number }).n));
  return pages;
}

describe('streamPages', () => {
  const store = new InMemoryEventStore();
  beforeAll(async () => {
    // Two streams interleaved, so a page must follow its stream's revisions, not the log's positions.
    for (let n = 0; n < 7; n++) {
      await store.append('s', [{ type: 't', data: { n } }]);
      await store.append('other', [{ type: 't', data: { n: 100 + n } }]);
    }
  });

  it('yields every event of the stream once, in order, a page at a time', async () => {
    expect(await pagesOf(store, 's', 3)).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    expect(await pagesOf(store, 'other', 5)).toEqual([[100, 101, 102, 103, 104], [105, 106]]);
  });

  it('a stream that fills its last page exactly ends without an empty page', async () => {
    expect(await pagesOf(store, 's', 7)).toEqual([[0, 1, 2, 3, 4, 5, 6]]);
  });

  it('starts at the revision asked for (a fold that starts from a snapshot)', async () => {
    expect(await pagesOf(store, 's', 3, 2n)).toEqual([[2, 3, 4], [5, 6]]);
    expect(await pagesOf(store, 's', 3, 6n)).toEqual([[6]]);
    expect(await pagesOf(store, 's', 3, 7n)).toEqual([]);
  });

  it('a stream that does not exist yields nothing', async () => {
    expect(await pagesOf(store, 'missing', 3)).toEqual([]);
  });
});
