import { sharedJsonText } from '@app/event-store';
import type { SourceEventEmitted } from './events';

/**
 * The text of an emit's record: `JSON.stringify(data)` with the payload (`event`) as the last
 * member, serialised by {@link sharedJsonText}, so the deliveries and listener dispatches of
 * the emit, which store the payload's text too, take that text instead of serialising it again.
 * Appended with `dataJsonIsData` (the members' order differs from `data`'s).
 */
export function emitRecordJson(data: SourceEventEmitted): string {
  const { event, ...rest } = data;
  const head = JSON.stringify(rest);
  return `${head.slice(0, -1)},"event":${sharedJsonText(event)}}`;
}
