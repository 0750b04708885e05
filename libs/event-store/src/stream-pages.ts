import type { EventStore, StoredEvent } from './event-store.port';

/** Events per page of {@link streamPages}. */
export const STREAM_PAGE_SIZE = 2_000;

/**
 * The events of `stream` in order from `fromRevision` (inclusive), a page at a time, so that
 * folding a long stream holds one page in memory, never the whole stream: a busy source's stream
 * gains an event or two per request.
 */
export async function* streamPages(
  store: Pick<EventStore, 'readStream'>, stream: string, pageSize = STREAM_PAGE_SIZE, fromRevision = 0n,
): AsyncGenerator<StoredEvent[]> {
  let from = fromRevision;
  for (;;) {
    const page = await store.readStream(stream, { fromRevision: from, maxCount: pageSize });
    if (page.length > 0) yield page;
    if (page.length < pageSize) return;
    from = page[page.length - 1].revision + 1n;
  }
}
