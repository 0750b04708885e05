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

describe('requestTexts: a JSON content type\'s body is written once, as bodyRaw, and never parsed by the server', () => {
  const sourceId = 'dc_1';
  const requestId = '0196a1b2-0000-7000-8000-000000000001';
  /** A JSON request's event as the endpoints make it: reading `body` throws, so a test fails if the texts read it. */
  const event = (bodyRaw: string): HttpRequestEvent => {
    const e = {
      method: 'POST', path: '/x', url: 'http://127.0.0.1/e/k/x?q=1', query: { q: '1' }, headers: { 'content-type': 'application/json' }, bodyRaw,
    } as unknown as HttpRequestEvent;
    Object.defineProperty(e, 'body', { enumerable: true, get: () => { throw new Error('the server read the body'); } });
    return e;
  };
  /** What a run was handed before stop 57: the server's parse (risky keys dropped), re-serialised; the raw text when not JSON. */
  const bodyAsBefore = (raw: string): unknown => {
    try {
      const parsed: unknown = JSON.parse(raw, (k, v: unknown) => (k === '__proto__' || k === 'constructor' || k === 'prototype' ? undefined : v));
      return JSON.parse(JSON.stringify(parsed) ?? 'null');
    } catch {
      return raw;
    }
  };
  /** The event a recovery rebuilds from the record's text, as the log returns it. */
  const recovered = (dataJson: string) => httpEventFromRecord(JSON.parse(dataJson) as HttpRequestReceived, 'http://127.0.0.1');

  it('leaves the body out of the invocation\'s text and the record\'s; the record gives back the event a run always got', () => {
    const bodies = [
      '{"n":1,"s":"a \\"q\\" b","d":"2024-01-05","id":"550e8400","a":[1,-10,2.5,null,true]}', ' [ 1 , {"x" : "y"} ] ', '"just a string"', '12',
      '{"a":-0}', '{"a": -0.0}', '[1e400]', '{"a":2.5E3}', `[${'9'.repeat(400)}]`, '{"__proto__":{"x":1}}', '{"constructor":1}', '{"a":"\\u0041"}',
      '{"broken":', 'not json at all',
    ];
    for (const raw of bodies) {
      const e = event(raw);
      const t = requestTexts(sourceId, requestId, e, true);
      expect(t.bodyFromRaw).toBe(true);
      const { method, path, url, query, headers } = e;
      const lean = { method, path, url, query, headers, bodyRaw: raw };
      // The invocation's text leaves the raw body out too: it crosses on its own (SandboxInvocation.bodyRaw).
      expect(t.eventJson).toBe(JSON.stringify({ method, path, url, query, headers }));
      expect(t.dataJson).toBe(JSON.stringify({ sourceId, requestId, ...lean, bodyFromRaw: true }));
      expect(JSON.parse(t.dataJson)).toEqual(t.data);
      // Keys in the live event's order, body last, and the value a run was always handed.
      const back = recovered(t.dataJson);
      expect(Object.keys(back)).toEqual([...Object.keys(lean), 'body']);
      expect(back.body).toStrictEqual(bodyAsBefore(raw));
    }
  });

  it('keeps the old texts for bodies that are not JSON by their content type, and for empty ones', () => {
    const form: HttpRequestEvent = {
      method: 'POST', path: '/x', url: 'http://127.0.0.1/e/k/x', query: {}, headers: { 'content-type': 'text/plain' }, bodyRaw: '{"n":1}', body: '{"n":1}',
    };
    expect(requestTexts(sourceId, requestId, form, false)).toMatchObject({ bodyFromRaw: false, eventJson: JSON.stringify(form) });
    const empty: HttpRequestEvent = { ...form, headers: { 'content-type': 'application/json' }, bodyRaw: '', body: undefined };
    expect(requestTexts(sourceId, requestId, empty, true)).toMatchObject({ bodyFromRaw: false, eventJson: JSON.stringify(empty) });
  });

  it('reads the records written before: a parsed body, and bodyFromRaw of a body that parsed as is', () => {
    const old = { sourceId, requestId, method: 'POST', path: '/x', url: 'http://127.0.0.1/e/k/x', query: {}, headers: {}, bodyRaw: '{"a":-0}', body: { a: 0 } };
    expect(httpEventFromRecord(old, 'http://127.0.0.1').body).toEqual({ a: 0 });
    const asIs = { ...old, body: undefined, bodyRaw: '{"a":[1,2]}', bodyFromRaw: true as const };
    expect(httpEventFromRecord(asIs, 'http://127.0.0.1').body).toEqual({ a: [1, 2] });
  });
});
