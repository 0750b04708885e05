import { createHmac } from 'node:crypto';
import { decodeWebhookSecret, generateWebhookSecret, signWebhook, webhookHeaders } from '../src/webhook-signer';

/** Independent reference: HMAC-SHA256 over "<id>.<timestamp>.<body>" keyed by the decoded secret. */
function referenceSignature(secret: string, msgId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return 'v1,' + createHmac('sha256', key).update(`${msgId}.${timestamp}.${body}`).digest('base64');
}

describe('generateWebhookSecret', () => {
  it('gives whsec_ + base64 of 32 random bytes, different every time', () => {
    const a = generateWebhookSecret();
    const b = generateWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(a.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(a).not.toBe(b);
  });
});

describe('signWebhook', () => {
  it('matches the example of the Standard Webhooks specification', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const msgId = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
    const body = '{"test": 2432232314}';
    const expected = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
    expect(referenceSignature(secret, msgId, 1614265330, body)).toBe(expected);
    expect(signWebhook([secret], msgId, 1614265330, body)).toBe(expected);
  });

  it('matches an independently computed HMAC for a generated secret and a unicode body', () => {
    const secret = generateWebhookSecret();
    const body = JSON.stringify({ text: 'grüße ✓', n: 1 });
    expect(signWebhook([secret], 'emit-1', 1700000000, body)).toBe(referenceSignature(secret, 'emit-1', 1700000000, body));
  });

  it('signs with every secret during a rotation, space-separated, in the order given', () => {
    const newer = generateWebhookSecret();
    const older = generateWebhookSecret();
    const header = signWebhook([newer, older], 'emit-2', 1700000001, '{}');
    expect(header.split(' ')).toEqual([
      referenceSignature(newer, 'emit-2', 1700000001, '{}'),
      referenceSignature(older, 'emit-2', 1700000001, '{}'),
    ]);
  });

  it('accepts a secret without the whsec_ prefix, as the reference libraries do', () => {
    const secret = generateWebhookSecret();
    const bare = secret.slice('whsec_'.length);
    expect(signWebhook([bare], 'a', 1, 'b')).toBe(signWebhook([secret], 'a', 1, 'b'));
  });

  it('gives the same answer from the key cache as on first use', () => {
    const secret = generateWebhookSecret();
    const first = signWebhook([secret], 'id', 5, 'x');
    expect(decodeWebhookSecret(secret)).toBe(decodeWebhookSecret(secret));
    expect(signWebhook([secret], 'id', 5, 'x')).toBe(first);
  });

  it('refuses unusable input without revealing the secret', () => {
    expect(() => signWebhook([], 'id', 1, 'x')).toThrow(/at least one/);
    expect(() => signWebhook(['whsec_not base64!'], 'id', 1, 'x')).toThrow(TypeError);
    expect(() => signWebhook(['whsec_not base64!'], 'id', 1, 'x')).not.toThrow(/not base64!/);
    expect(() => signWebhook(['whsec_'], 'id', 1, 'x')).toThrow(TypeError);
    expect(() => signWebhook([generateWebhookSecret()], 'id', 1.5, 'x')).toThrow(/whole/);
    expect(() => signWebhook([generateWebhookSecret()], '', 1, 'x')).toThrow(/id/);
  });
});

describe('webhookHeaders', () => {
  it('produces exactly the headers a webhook receives', () => {
    const secret = generateWebhookSecret();
    const body = '{"hello":"world"}';
    const headers = webhookHeaders({ secrets: [secret], msgId: 'emit-9', timestampSeconds: 1700000002, body, emitterId: 'dc_abc', eventName: 'orders' });
    expect(headers).toEqual({
      'content-type': 'application/json',
      'webhook-id': 'emit-9',
      'webhook-timestamp': '1700000002',
      'webhook-signature': referenceSignature(secret, 'emit-9', 1700000002, body),
      'x-pd-emitter-id': 'dc_abc',
      'x-pd-emit-id': 'emit-9',
      'x-pd-event-name': 'orders',
    });
  });

  it('percent-encodes names that cannot travel in a header, keeping the default channel empty', () => {
    const headers = webhookHeaders({ secrets: [generateWebhookSecret()], msgId: 'e', timestampSeconds: 1, body: '{}', emitterId: 'dc_x', eventName: 'café\n' });
    expect(headers['x-pd-event-name']).toBe('caf%C3%A9%0A');
    const defaultChannel = webhookHeaders({ secrets: [generateWebhookSecret()], msgId: 'e', timestampSeconds: 1, body: '{}', emitterId: 'dc_x', eventName: '' });
    expect(defaultChannel['x-pd-event-name']).toBe('');
  });
});
