import { packageNameOf, resolveLimits } from '@app/sandbox';
import { parseGuestJson } from '../src/guest-json.parser';
import { parseGuestDescription, parseGuestResult } from '../src/guest-result.parser';

describe('parseGuestJson', () => {
  it('drops __proto__, constructor and prototype keys at every depth, escaped spellings included', () => {
    const parsed = parseGuestJson('{"a":{"__proto__":{"x":1},"b":[{"constructor":{"prototype":{"y":1}}}]},"__pro\\u0074o__":{"z":1},"prototype":2}') as Record<string, unknown>;
    expect(parsed).toEqual({ a: { b: [{}] } });
    expect(Object.keys(parsed)).toEqual(['a']);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('keeps ordinary data as JSON.parse does', () => {
    const text = '{"list":[1,"two",null,true],"nested":{"constructorName":"ok"}}';
    expect(parseGuestJson(text)).toEqual(JSON.parse(text));
  });
});

describe('parseGuestResult', () => {
  it('keeps only documented fields with the right types', () => {
    const outcome = parseGuestResult(JSON.stringify({
      ok: true,
      emits: [{ event: { a: 1 }, meta: { id: 1, name: 'n', summary: 5, ts: 'x', extra: true } }],
      dbWrites: [{ key: 'k', value: [1] }],
      httpResponse: { status: 200, headers: { a: 'b', n: 1 }, body: 'x' },
      returnValue: 3,
      injected: 'ignored',
    }));
    expect(outcome).toEqual({
      ok: true,
      emits: [{ event: { a: 1 }, meta: { id: 1, name: 'n' } }],
      dbWrites: [{ key: 'k', value: [1] }],
      httpResponse: { status: 200, headers: { a: 'b' }, body: 'x' },
      returnValue: 3,
    });
  });

  it('throws for text that is not the runtime\'s shape', () => {
    expect(() => parseGuestResult(42)).toThrow(/malformed/);
    expect(() => parseGuestResult('{"ok":true}')).toThrow(/malformed/);
    expect(() => parseGuestResult('{"ok":true,"emits":[1],"dbWrites":[]}')).toThrow(/malformed/);
    expect(() => parseGuestResult('{"ok":true,"emits":[],"dbWrites":[],"httpResponse":{"status":700}}')).toThrow(/malformed/);
  });

  it('keeps an action\'s exports, summary, sends and flow exit, and refuses sends a tampered runtime could make', () => {
    const base = { ok: true, emits: [], dbWrites: [] };
    const outcome = parseGuestResult(JSON.stringify({
      ...base, exports: { a: 1 }, summary: 's', flowExit: { reason: 'r' },
      sends: [{ kind: 'http', params: { method: 'POST', url: 'https://example.com/x' } }, { kind: 'emit', params: { raw_event: 1 } }],
      httpResponse: { status: 201, headers: {}, immediate: true },
    }));
    expect(outcome).toMatchObject({
      exports: { a: 1 }, summary: 's', flowExit: { reason: 'r' }, httpResponse: { status: 201, headers: {}, immediate: true },
      sends: [{ kind: 'http', params: { method: 'POST', url: 'https://example.com/x' } }, { kind: 'emit', params: { raw_event: 1 } }],
    });
    const bad = (sends: unknown) => () => parseGuestResult(JSON.stringify({ ...base, sends }));
    expect(bad([{ kind: 'ftp', params: {} }])).toThrow(/malformed/);
    expect(bad([{ kind: 'http', params: { method: 'GET', url: 'file:///etc/passwd' } }])).toThrow(/malformed/);
    expect(bad([{ kind: 'email', params: { subject: 1 } }])).toThrow(/malformed/);
    expect(bad([{ kind: 'sse', params: {} }])).toThrow(/malformed/);
    expect(bad({})).toThrow(/malformed/);
  });

  it('keeps the error of a failed run, user kind unless invalid', () => {
    const outcome = parseGuestResult('{"ok":false,"error":{"name":"E","message":"m","kind":"crash"},"emits":[],"dbWrites":[]}');
    expect(outcome.error).toEqual({ name: 'E', message: 'm', kind: 'user' });
  });
});

describe('parseGuestDescription', () => {
  it('enforces the description shape', () => {
    expect(parseGuestDescription('{"name":"n","props":[{"name":"a","type":"string"},{"type":"x"}],"hooks":["deploy",1],"methods":"no","hasRun":1}')).toEqual({
      name: 'n', key: undefined, version: undefined, type: undefined, description: undefined, dedupe: undefined,
      props: [{ name: 'a', type: 'string' }], hooks: ['deploy'], methods: [], hasRun: false, hasAdditionalProps: false,
    });
  });
});

describe('resolveLimits', () => {
  it('layers limits and clamps them to what can be enforced', () => {
    expect(resolveLimits()).toEqual({ memoryMb: 128, timeoutMs: 30000, cpuMs: 30000 });
    expect(resolveLimits({ memoryMb: 64 }, { timeoutMs: 500, cpuMs: -1 })).toEqual({ memoryMb: 64, timeoutMs: 500, cpuMs: 30000 });
    expect(resolveLimits({ memoryMb: 1, timeoutMs: 0.2 })).toEqual({ memoryMb: 8, timeoutMs: 1, cpuMs: 30000 });
  });
});

describe('packageNameOf', () => {
  it('names the package of a bare import', () => {
    expect(packageNameOf('axios')).toBe('axios');
    expect(packageNameOf('axios@0.19.2')).toBe('axios');
    expect(packageNameOf('lodash/get')).toBe('lodash');
    expect(packageNameOf('@pipedream/platform')).toBe('@pipedream/platform');
    expect(packageNameOf('@scope/pkg@^1.2.0/sub')).toBe('@scope/pkg');
  });
});
