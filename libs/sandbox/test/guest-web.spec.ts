import { TextDecoder as NodeTextDecoder } from 'node:util';
import { formatLogArgs } from '../src/guest/console-format.guest';
import { structuredClone as guestClone } from '../src/guest/web-clone.guest';
import * as encoding from '../src/guest/web-encoding.guest';
import { Headers } from '../src/guest/web-fetch.guest';
import { URLSearchParams as GuestSearchParams } from '../src/guest/web-url.guest';

// The guest runtime's modules are plain TypeScript without host dependencies, so they are checked
// here against Node's own implementations of the same web standards.

const MALFORMED_UTF8 = [
  [0xff], [0xc0, 0x80], [0xc2], [0xe0, 0x80, 0x80], [0xe0, 0xa0], [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x98],
  [0xf0, 0x9f, 0x98, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x61, 0xf0, 0x62], [0xe2, 0x82, 0xac, 0x80, 0x41],
  [0xf8, 0x88, 0x80, 0x80, 0x80], [0xc3, 0xa9, 0xe2, 0x98],
];

describe('guest TextEncoder / TextDecoder', () => {
  it('encodes like Buffer, lone surrogates included', () => {
    for (const text of ['', 'ascii', 'héllo', '☃ snow', '😀 emoji', 'a\ud800b', '\udc00', 'end\ud83d']) {
      // Buffer too writes U+FFFD for a lone surrogate.
      expect(Buffer.from(new encoding.TextEncoder().encode(text))).toEqual(Buffer.from(text, 'utf8'));
      expect(encoding.utf8Length(text)).toBe(Buffer.byteLength(text));
    }
  });

  it('decodes malformed UTF-8 exactly as the WHATWG decoder does', () => {
    for (const bytes of MALFORMED_UTF8) {
      const input = new Uint8Array(bytes);
      expect(new encoding.TextDecoder().decode(input)).toBe(new NodeTextDecoder().decode(input));
      const nodeFatal = (() => {
        try {
          new NodeTextDecoder('utf-8', { fatal: true }).decode(input);
          return false;
        } catch {
          return true;
        }
      })();
      if (nodeFatal) expect(() => new encoding.TextDecoder('utf-8', { fatal: true }).decode(input)).toThrow(TypeError);
      else expect(new encoding.TextDecoder('utf-8', { fatal: true }).decode(input)).toBe(new NodeTextDecoder().decode(input));
    }
  });

  it('decodes a stream whose characters are split across chunks', () => {
    const bytes = Buffer.from('a😀é☃z');
    for (let cut = 0; cut <= bytes.length; cut++) {
      const decoder = new encoding.TextDecoder();
      const text = decoder.decode(bytes.subarray(0, cut), { stream: true }) + decoder.decode(bytes.subarray(cut));
      expect(text).toBe('a😀é☃z');
    }
  });

  it('strips the BOM unless asked not to, and supports utf-16le and windows-1252', () => {
    const withBom = new Uint8Array([0xef, 0xbb, 0xbf, 0x61]);
    expect(new encoding.TextDecoder().decode(withBom)).toBe('a');
    expect(new encoding.TextDecoder('utf-8', { ignoreBOM: true }).decode(withBom)).toBe('\ufeffa');
    // Node decodes windows-1252 as ISO-8859-1; the WHATWG standard (and browsers) map 0x80-0x9F.
    const latin1 = new encoding.TextDecoder('latin1').decode(new Uint8Array([0x41, 0x80, 0x81, 0x9f, 0xe9, 0xff]));
    expect(latin1).toBe('A€\u0081Ÿéÿ');
    const utf16 = Buffer.from('hé😀', 'utf16le');
    expect(new encoding.TextDecoder('utf-16le').decode(utf16)).toBe('hé😀');
    expect(new encoding.TextDecoder('utf-16le').decode(new Uint8Array([0x00, 0xd8, 0x61, 0x00]))).toBe(new NodeTextDecoder('utf-16le').decode(new Uint8Array([0x00, 0xd8, 0x61, 0x00])));
    expect(() => new encoding.TextDecoder('klingon')).toThrow(RangeError);
  });

  it('encodeInto never splits a character', () => {
    const target = new Uint8Array(5);
    expect(new encoding.TextEncoder().encodeInto('ab😀', target)).toEqual({ read: 2, written: 2 });
    const roomy = new Uint8Array(6);
    expect(new encoding.TextEncoder().encodeInto('ab😀', roomy)).toEqual({ read: 4, written: 6 });
  });
});

describe('guest atob / btoa', () => {
  it('matches Buffer base64', () => {
    for (const text of ['', 'a', 'ab', 'abc', 'abcd', '\u0000\u00ff\u0080 binary']) {
      const b64 = encoding.btoa(text);
      expect(b64).toBe(Buffer.from(text, 'latin1').toString('base64'));
      expect(encoding.atob(b64)).toBe(text);
    }
    expect(encoding.atob(' YW J j\n')).toBe('abc');
    expect(encoding.atob('YWJj')).toBe('abc');
    expect(encoding.atob('YQ')).toBe('a');
  });

  it('throws InvalidCharacterError like browsers', () => {
    expect(() => encoding.btoa('☃')).toThrow(expect.objectContaining({ name: 'InvalidCharacterError' }));
    expect(() => encoding.atob('a')).toThrow(expect.objectContaining({ name: 'InvalidCharacterError' }));
    expect(() => encoding.atob('ab$=')).toThrow(expect.objectContaining({ name: 'InvalidCharacterError' }));
  });
});

describe('guest URLSearchParams', () => {
  it('parses and serialises like Node', () => {
    for (const query of ['?a=1&b=two+words&c=%C3%A9&d', 'x=%zz&y=%E2%82&=empty&&z==', 'q=a%2Bb&q=second', '']) {
      const guest = new GuestSearchParams(query);
      const node = new URLSearchParams(query);
      expect([...guest]).toEqual([...node]);
      expect(guest.toString()).toBe(node.toString());
    }
    const special = ' !"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~é😀';
    expect(new GuestSearchParams({ k: special }).toString()).toBe(new URLSearchParams({ k: special }).toString());
  });

  it('supports the list operations', () => {
    const params = new GuestSearchParams([['b', '2'], ['a', '1'], ['b', '3']]);
    params.set('b', '4');
    params.append('c', '5');
    params.sort();
    expect(params.toString()).toBe('a=1&b=4&c=5');
    expect(params.getAll('b')).toEqual(['4']);
    params.delete('a');
    expect(params.has('a')).toBe(false);
    expect(params.size).toBe(2);
  });
});

describe('guest structuredClone', () => {
  it('clones graphs with cycles and built-in types', () => {
    const source: Record<string, unknown> = { d: new Date(5), r: /x/gi, m: new Map([[1, 'one']]), s: new Set(['a']), bytes: new Uint8Array([1, 2]) };
    source.self = source;
    const copy = guestClone(source);
    expect(copy).not.toBe(source);
    expect(copy.self).toBe(copy);
    expect(copy.d).toEqual(new Date(5));
    expect((copy.m as Map<number, string>).get(1)).toBe('one');
    expect(Array.from(copy.bytes as Uint8Array)).toEqual([1, 2]);
    expect(copy.bytes).not.toBe(source.bytes);
  });

  it('refuses functions and symbols with DataCloneError', () => {
    expect(() => guestClone({ f: () => 1 })).toThrow(expect.objectContaining({ name: 'DataCloneError' }));
    expect(() => guestClone(Symbol('s'))).toThrow(expect.objectContaining({ name: 'DataCloneError' }));
  });
});

describe('guest console formatting', () => {
  it('formats like Node for common cases', () => {
    expect(formatLogArgs(['a', 1, true, null, undefined])).toBe('a 1 true null undefined');
    expect(formatLogArgs(['%s has %d items (%i%%)', 'cart', 3.5, 42.9])).toBe('cart has 3.5 items (42%)');
    expect(formatLogArgs(['json %j', { a: [1] }])).toBe('json {"a":[1]}');
    expect(formatLogArgs([{ a: 1, 'b-c': 'x', nested: { deep: { deeper: { deepest: 1 } } } }])).toBe("{ a: 1, 'b-c': 'x', nested: { deep: { deeper: [Object] } } }");
    expect(formatLogArgs([[1, 'two'], new Map([['k', 1]]), new Set([1])])).toBe("[ 1, 'two' ] Map(1) { 'k' => 1 } Set(1) { 1 }");
    const cyclic: Record<string, unknown> = {};
    cyclic.me = cyclic;
    expect(formatLogArgs([cyclic])).toBe('{ me: [Circular] }');
    expect(formatLogArgs([function named() {}, 10n, Symbol('s')])).toBe('[Function: named] 10n Symbol(s)');
  });
});

describe('guest Headers', () => {
  it('is case-insensitive, sorted, and keeps set-cookie lines apart', () => {
    const headers = new Headers({ 'X-B': '1', 'x-a': ' 2 ' });
    headers.append('X-B', '3');
    headers.append('Set-Cookie', 'a=1');
    headers.append('set-cookie', 'b=2');
    expect([...headers]).toEqual([['set-cookie', 'a=1'], ['set-cookie', 'b=2'], ['x-a', '2'], ['x-b', '1, 3']]);
    expect(headers.get('X-A')).toBe('2');
    expect(headers.get('missing')).toBeNull();
    expect(() => headers.set('bad header', 'x')).toThrow(TypeError);
    expect(() => headers.set('x', 'a\r\nb')).toThrow(TypeError);
  });
});
