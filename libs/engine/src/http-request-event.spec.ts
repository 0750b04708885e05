import type { HttpRequestReceived } from '@app/domain';
import { httpEventFromRecord, requestDataJson, requestTexts, type HttpRequestEvent } from './http-request-event';

describe('requestDataJson', () => {
  const base: HttpRequestEvent = { method: 'POST', path: '/', url: 'http://127.0.0.1/e/k', query: {}, headers: {}, bodyRaw: '', body: undefined };

  it('is JSON.stringify of the recorded data, { sourceId, requestId, ...event }, made from the event\'s own text', () => {
    const events: HttpRequestEvent[] = [
      base,
      { ...base, body: null },
      { ...base, method: 'GET', path: '/a"b\\c', query: { q: ['1', '2'], 'é': 'ü' }, headers: { 'x-\u2603': 'caf\u00e9', 'content-type': 'text/plain' } },
      { ...base, bodyRaw: '{"n":1,"s":"\\"q\\""}', body: { n: 1, s: '"q"', nested: [null, { deep: true }], undef: undefined } },
      { ...base, bodyRaw: '\u0000\u001f\ud83d\ude00', body: '\ud800 lone surrogate' },
    ];
    for (const event of events) {
      const sourceId = 'dc_ab"c';
      const requestId = '0196a1b2-0000-7000-8000-000000000001';
      expect(requestDataJson(sourceId, requestId, JSON.stringify(event))).toBe(JSON.stringify({ sourceId, requestId, ...event }));
    }
  });

  it('stays valid JSON for an event without members', () => {
    expect(requestDataJson('dc_1', 'r', '{}')).toBe(JSON.stringify({ sourceId: 'dc_1', requestId: 'r' }));
  });
});

describe('requestTexts: a JSON body is written once, as bodyRaw, when its text parses as is', () => {
  const sourceId = 'dc_1';
  const requestId = '0196a1b2-0000-7000-8000-000000000001';
  const event = (bodyRaw: string): HttpRequestEvent => ({
    method: 'POST', path: '/x', url: 'http://127.0.0.1/e/k/x?q=1', query: { q: '1' }, headers: { 'content-type': 'application/json' },
    bodyRaw, body: JSON.parse(bodyRaw),
  });
  /** The event a recovery rebuilds from the record's text, as the log returns it. */
  const recovered = (dataJson: string) => httpEventFromRecord(JSON.parse(dataJson) as HttpRequestReceived, 'http://127.0.0.1');

  it('leaves the body out of the invocation\'s text and the record\'s; the record gives back the same event', () => {
    for (const raw of ['{"n":1,"s":"a \\"q\\" b","d":"2024-01-05","id":"550e8400","a":[1,-10,2.5,null,true]}', ' [ 1 , {"x" : "y"} ] ', '"just a string"', '12']) {
      const e = event(raw);
      const t = requestTexts(sourceId, requestId, e, true);
      expect(t.bodyFromRaw).toBe(true);
      const { body: _body, ...lean } = e;
      expect(t.eventJson).toBe(JSON.stringify(lean));
      expect(t.dataJson).toBe(JSON.stringify({ sourceId, requestId, ...lean, bodyFromRaw: true }));
      expect(JSON.parse(t.dataJson)).toEqual(t.data);
      // Keys in the live event's order, body last, and the same value.
      const back = recovered(t.dataJson);
      expect(Object.keys(back)).toEqual(Object.keys(e));
      expect(back).toEqual(e);
    }
  });

  it('keeps the old texts when the body\'s parse could differ from its re-serialisation\'s, or it is not a parsed JSON body', () => {
    const risky = ['{"a":-0}', '{"a": -0.0}', '[1e400]', '{"a":2.5E3}', `[${'9'.repeat(400)}]`, '{"__proto__":{"x":1}}', '{"constructor":1}', '{"a":"\\u0041"}'];
    for (const raw of risky) {
      const e = event(raw);
      const t = requestTexts(sourceId, requestId, e, true);
      expect(t.bodyFromRaw).toBe(false);
      expect(t.eventJson).toBe(JSON.stringify(e));
      expect(t.dataJson).toBe(JSON.stringify({ sourceId, requestId, ...e }));
      expect(recovered(t.dataJson)).toEqual(JSON.parse(JSON.stringify(e)));
    }
    const form = { ...event('{"n":1}'), headers: { 'content-type': 'text/plain' }, body: '{"n":1}' };
    expect(requestTexts(sourceId, requestId, form, false)).toMatchObject({ bodyFromRaw: false, eventJson: JSON.stringify(form) });
    expect(requestTexts(sourceId, requestId, { ...event('1'), bodyRaw: '', body: undefined }, true).bodyFromRaw).toBe(false);
  });
});
