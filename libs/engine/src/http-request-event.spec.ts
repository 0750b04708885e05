import { requestDataJson, type HttpRequestEvent } from './http-request-event';

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
