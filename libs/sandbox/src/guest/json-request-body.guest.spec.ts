import { jsonRequestBody } from './json-request-body.guest';

/** What a run was handed before the guest made the body: the server's parse (risky keys dropped), re-serialised; the raw text when not JSON. */
function bodyAsBefore(raw: string): unknown {
  try {
    const parsed: unknown = JSON.parse(raw, (k, v: unknown) => (k === '__proto__' || k === 'constructor' || k === 'prototype' ? undefined : v));
    return JSON.parse(JSON.stringify(parsed) ?? 'null');
  } catch {
    return raw;
  }
}

/** Whether a value holds -0 or a non-finite number anywhere (what a JSON round trip takes away). */
function holdsUnserialisable(v: unknown): boolean {
  if (typeof v === 'number') return Object.is(v, -0) || !Number.isFinite(v);
  if (v && typeof v === 'object') return Object.values(v).some(holdsUnserialisable);
  return false;
}

describe('jsonRequestBody: the body a run is handed, made from the raw text', () => {
  const cases = [
    '{"n":1,"t":1733462400000.123,"d":"2026-05-06T05:00:00Z","list":[1,-10,2.5,null,true,false]}',
    ' [ 1 , {"x" : "y"} ] ', '"text"', '12', 'null', 'true', '-5', '3.25',
    // negative zero, however spelt
    '-0', '{"a":-0}', '{"a": -0.0}', '[-0e5]', '[ -0.000]', '{"a":-1e-400}', '{"a":[1,\n-0]}',
    // past a double
    '[1e400]', '[-1E+400]', `[${'9'.repeat(400)}]`, `[${'1'.repeat(300)}e99]`, '{"a":2.5E3,"b":1e308}',
    // text that looks like those numbers inside strings
    '{"s":"x,-0","h":"a1e999","long":"' + '7'.repeat(120) + '"}',
    // keys the server always dropped, also spelt with escapes
    '{"__proto__":{"polluted":true},"ok":1}', '{"constructor":{"prototype":1},"k":2}', '{"a":{"\\u005f_proto__":{"x":1}},"b":"\\u0041"}',
    // not JSON
    '{"broken":', 'plain text', '{"__proto__":', '',
  ];

  it.each(cases)('%s: the same value as the server\'s parse then a JSON round trip gave', (raw) => {
    const body = jsonRequestBody(raw);
    expect(body).toStrictEqual(bodyAsBefore(raw));
    expect(holdsUnserialisable(body)).toBe(false);
  });

  it('drops __proto__ keys without touching any prototype', () => {
    const body = jsonRequestBody('{"__proto__":{"polluted":true},"nested":{"__proto__":{"polluted":true}}}') as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['nested']);
    expect(Object.getPrototypeOf(body)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(body.nested as object)).toEqual([]);
  });

  it('never throws: a body nested deeper than serialising can go is handed over as parsed', () => {
    const deep = '['.repeat(20_000) + '1e400' + ']'.repeat(20_000);
    let body: unknown;
    expect(() => (body = jsonRequestBody(deep))).not.toThrow();
    expect(Array.isArray(body)).toBe(true);
    const tooDeepToParse = '['.repeat(200_000) + ']'.repeat(200_000);
    expect(() => jsonRequestBody(tooDeepToParse)).not.toThrow();
  });

  it('hands back the raw text itself when it is not JSON', () => {
    const raw = '{"half":';
    expect(jsonRequestBody(raw)).toBe(raw);
  });
});
