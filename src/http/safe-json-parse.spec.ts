import { safeJsonParse } from './request-params';

/** What safeJsonParse is defined to give: JSON.parse with a reviver dropping the three keys, always. */
const reference = (text: string): unknown =>
  JSON.parse(text, (key, value) => (key === '__proto__' || key === 'constructor' || key === 'prototype' ? undefined : value));

/** Every own key at any depth, so a dropped key is seen even where toEqual would not look. */
function ownKeys(value: unknown, path = '$'): string[] {
  if (value === null || typeof value !== 'object') return [];
  return Reflect.ownKeys(value).flatMap((k) => [`${path}.${String(k)}`, ...ownKeys((value as Record<string | symbol, unknown>)[k], `${path}.${String(k)}`)]);
}

describe('safeJsonParse', () => {
  const texts = [
    '{"a":1,"b":[1,2,{"c":"d"}],"e":null,"f":true,"g":1.5e3}',
    '[]',
    '"just a string"',
    '42',
    '{"__proto__":{"polluted":true},"ok":1}',
    '{"nested":{"constructor":{"prototype":{"x":1}},"keep":2}}',
    '{"\\u005f_proto__":{"polluted":true},"ok":1}',
    '{"\\u0063onstructor":1,"ok":2}',
    '{"pro\\u0074otype":1}',
    '{"text":"caf\\u00e9 \\"quoted\\" \\\\ back","list":["__proto__","constructor"]}',
    '{"k":"prototype as a value only"}',
    '{"deep":[[[{"a":{"b":{"c":[1,{"__proto__":1}]}}}]]]}',
  ];

  it.each(texts)('gives what the reviver gives for %s', (text) => {
    const got = safeJsonParse(text);
    expect(got).toEqual(reference(text));
    expect(ownKeys(got)).toEqual(ownKeys(reference(text)));
  });

  it('never leaves a __proto__, constructor or prototype key, written out or escaped, and never changes a prototype', () => {
    for (const text of texts) {
      const got = safeJsonParse(text);
      expect(ownKeys(got).filter((k) => /\.(__proto__|constructor|prototype)$/.test(k))).toEqual([]);
      if (got && typeof got === 'object' && !Array.isArray(got)) expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('throws on text that is not JSON, as JSON.parse does', () => {
    expect(() => safeJsonParse('{"a":')).toThrow(SyntaxError);
    expect(() => safeJsonParse('{"__proto__":')).toThrow(SyntaxError);
  });
});
