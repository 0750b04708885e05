import { sharedJsonText } from '@app/event-store';
import { emitRecordJson } from './emit-record-json';
import type { SourceEventEmitted } from './events';

describe('emitRecordJson: an emit\'s record text, its payload serialised once for the record and its deliveries', () => {
  const emit = (event: unknown): SourceEventEmitted => ({
    sourceId: 'dc_1', accountId: 'u_1', emitId: '0196a1b2-0000-7000-8000-000000000001', runId: 'r_1', summaryId: '1-0',
    event, meta: { id: 'x"y', summary: 'has "event": inside', ts: 5 }, hops: 1, deliveryIds: 'ordered',
  });

  it('parses to the emit\'s data, the payload last', () => {
    for (const payload of [{ a: 1, nested: { event: 'no' }, list: [1, 'two', null] }, [1, 2], 'text', 12, null, true]) {
      const data = emit(payload);
      const text = emitRecordJson(data);
      expect(JSON.parse(text)).toEqual(data);
      expect(Object.keys(JSON.parse(text) as object)).toEqual(['sourceId', 'accountId', 'emitId', 'runId', 'summaryId', 'meta', 'hops', 'deliveryIds', 'event']);
      expect(text.endsWith(`,"event":${JSON.stringify(payload)}}`)).toBe(true);
    }
  });

  it('holds the very text its deliveries get (sharedJsonText), serialised once', () => {
    let serialised = 0;
    const payload = { n: 1, toJSON() { serialised++; return { n: 1 }; } };
    const text = emitRecordJson(emit(payload));
    expect(serialised).toBe(1);
    expect(sharedJsonText(payload)).toBe('{"n":1}');
    expect(serialised).toBe(1);
    expect(text.endsWith(',"event":{"n":1}}')).toBe(true);
  });
});
