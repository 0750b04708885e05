import { execFileSync } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { hmacSha256Base64, hmacSha256Key, leanDigestInUse, sha1Into } from '../src/digest';

const ROOT = join(__dirname, '..', '..', '..');
const DIST_DIGEST = join(ROOT, 'dist', 'libs', 'native', 'src', 'digest.js');
const DIST_LIBRARY = join(ROOT, 'dist', 'native', 'lean-digest.node');

const b64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');
const sha1Hex = (text: string) => {
  const out = new Uint8Array(20);
  sha1Into(text, out);
  return Buffer.from(out).toString('hex');
};

/** Texts whose UTF-8 crosses the library's 4 KiB stack buffer with characters of 1 to 4 bytes, and lone surrogates. */
function awkwardTexts(): string[] {
  const texts = ['', 'a', 'Hi There', '\ud800', 'x\udc00y', '\ud83d\ude00', 'é€😀'];
  for (const ch of ['x', 'é', '€', '😀', '\ud800']) {
    for (let bytes = 4084; bytes <= 4102; bytes++) {
      for (const lead of ['', 'a', 'ab', 'abc']) {
        const unit = Buffer.byteLength(ch);
        texts.push(lead + ch.repeat(Math.ceil(bytes / unit)));
      }
    }
  }
  texts.push('z'.repeat(2 << 20), '€'.repeat(300_000));
  return texts;
}

/** A TypeError with exactly `message` (thrown from the library, so of the process's realm, not jest's). */
function expectTypeError(call: () => unknown, message: string): void {
  let thrown: unknown;
  try {
    call();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toMatchObject({ name: 'TypeError', message });
}

describe('digests (libs/native/native/lean-digest.c)', () => {
  it('are made by the library here (the build compiles it)', () => {
    expect(leanDigestInUse()).toBe(true);
  });

  it('HMAC-SHA256 gives RFC 4231 test vectors, the key longer than a block hashed first', () => {
    const cases: [Buffer, string, string][] = [
      [Buffer.alloc(20, 0x0b), 'Hi There', 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7'],
      [Buffer.from('Jefe'), 'what do ya want for nothing?', '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843'],
      [Buffer.alloc(131, 0xaa), 'Test Using Larger Than Block-Size Key - Hash Key First', '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54'],
      [
        Buffer.alloc(131, 0xaa),
        'This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.',
        '9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2',
      ],
    ];
    for (const [key, data, hex] of cases) {
      const k = hmacSha256Key(key);
      expect(k.state).toBeInstanceOf(Buffer);
      // The same bytes however they are split between the two texts.
      for (const at of [0, 1, data.length >> 1, data.length]) {
        expect(hmacSha256Base64(k, data.slice(0, at), data.slice(at))).toBe(b64(hex));
      }
    }
  });

  it('HMAC-SHA256 matches node:crypto for keys of every length and texts of every shape', () => {
    const keys = [Buffer.alloc(0), Buffer.alloc(1, 7), randomBytes(32), randomBytes(63), randomBytes(64), randomBytes(65), randomBytes(200)];
    const prefix = '01939e4c-7a3b-7c41-8a52-1d2e3f4a5b6c.1733630000.';
    for (const key of keys) {
      const k = hmacSha256Key(key);
      for (const body of awkwardTexts()) {
        const want = createHmac('sha256', key).update(prefix).update(body).digest('base64');
        expect(hmacSha256Base64(k, prefix, body)).toBe(want);
      }
    }
  });

  it('the key is copied: changing the caller\'s bytes later changes nothing', () => {
    const bytes = Buffer.from('secret-bytes-of-a-webhook');
    const k = hmacSha256Key(bytes);
    const before = hmacSha256Base64(k, 'a', 'b');
    bytes.fill(0);
    expect(hmacSha256Base64(k, 'a', 'b')).toBe(before);
    expect(before).toBe(createHmac('sha256', Buffer.from('secret-bytes-of-a-webhook')).update('ab').digest('base64'));
  });

  it('SHA-1 gives FIPS 180 test vectors and matches node:crypto for every shape of text', () => {
    expect(sha1Hex('abc')).toBe('a9993e364706816aba3e25717850c26c9cd0d89d');
    expect(sha1Hex('')).toBe('da39a3ee5e6b4b0d3255bfef95601890afd80709');
    expect(sha1Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe('84983e441c3bd26ebaae4aa1f95129e5e54670f1');
    for (const text of awkwardTexts()) expect(sha1Hex(text)).toBe(createHash('sha1').update(text).digest('hex'));
    // Only the first 20 bytes of a longer array are written.
    const out = new Uint8Array(24).fill(0xee);
    sha1Into('abc', out);
    expect(Buffer.from(out.subarray(20)).toString('hex')).toBe('eeeeeeee');
  });

  it('refuses arguments of the wrong kind by name, and a state that is not one', () => {
    const lib = require(DIST_LIBRARY) as {
      hmacSha256Key(key: unknown): Buffer;
      hmacSha256Base64(state: unknown, ...texts: unknown[]): string;
      sha1Into(text: unknown, out: unknown): void;
    };
    expectTypeError(() => lib.hmacSha256Key('a string'), 'hmacSha256Key: key must be a Uint8Array');
    expect(() => lib.hmacSha256Key(new Uint16Array(4))).toThrow(/key must be a Uint8Array/);
    const state = lib.hmacSha256Key(Buffer.from('k'));
    expectTypeError(() => lib.hmacSha256Base64(Buffer.alloc(10), 'a'), 'hmacSha256Base64: state must be what hmacSha256Key returned');
    expect(() => lib.hmacSha256Base64(state)).toThrow(/at least one text/);
    expectTypeError(() => lib.hmacSha256Base64(state, 'a', 5), 'hmacSha256Base64: each text must be a string');
    expectTypeError(() => lib.sha1Into(5, new Uint8Array(20)), 'sha1Into: text must be a string');
    expectTypeError(() => lib.sha1Into('a', new Uint8Array(19)), 'sha1Into: out must be a Uint8Array of at least 20 bytes');
    // Up to four texts, hashed one after the other.
    expect(lib.hmacSha256Base64(state, 'a', 'b', 'c', 'd')).toBe(createHmac('sha256', 'k').update('abcd').digest('base64'));
  });

  it('SLUICE_LEAN_DIGEST=off makes the same digests through node:crypto; other values are refused by name', () => {
    const script = `
      const d = require(${JSON.stringify(DIST_DIGEST)});
      const k = d.hmacSha256Key(Buffer.from('Jefe'));
      const out = new Uint8Array(20);
      d.sha1Into('abc', out);
      console.log(JSON.stringify({ lean: d.leanDigestInUse(), state: k.state !== undefined, mac: d.hmacSha256Base64(k, 'what do ya want ', 'for nothing?'), sha1: Buffer.from(out).toString('hex') }));`;
    const run = (env: NodeJS.ProcessEnv) => JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: ROOT, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
    const same = { mac: b64('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843'), sha1: 'a9993e364706816aba3e25717850c26c9cd0d89d' };
    expect(run({ ...process.env, SLUICE_LEAN_DIGEST: 'off' })).toEqual({ lean: false, state: false, ...same });
    expect(run({ ...process.env, SLUICE_LEAN_DIGEST: '' })).toEqual({ lean: true, state: true, ...same });
    expect(run({ ...process.env, SLUICE_LEAN_DIGEST: 'on' })).toEqual({ lean: true, state: true, ...same });
    expect(() => run({ ...process.env, SLUICE_LEAN_DIGEST: 'yes' })).toThrow(/SLUICE_LEAN_DIGEST must be "on" or "off", got "yes"/);
  });
});
