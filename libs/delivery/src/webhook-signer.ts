import { randomBytes } from 'node:crypto';
import { hmacSha256Base64, hmacSha256Key, type HmacSha256Key } from '@app/native';

/** Prefix of every signing secret, as the Standard Webhooks specification writes them. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const MAX_CACHED_KEYS = 10_000;
const decodedKeys = new Map<string, HmacSha256Key>();

/** A new signing secret: `whsec_` + base64 of 32 random bytes (Standard Webhooks asks for 24 to 64). */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64');
}

/**
 * The HMAC key of a `whsec_<base64>` secret (the prefix is optional, as in the reference
 * libraries). Throws a TypeError that never contains the secret itself.
 */
export function decodeWebhookSecret(secret: string): Buffer {
  return signingKey(secret).key;
}

/** The HMAC key of a secret, kept per secret ({@link hmacSha256Key}: its pads hashed once). */
function signingKey(secret: string): HmacSha256Key {
  const cached = decodedKeys.get(secret);
  if (cached) return cached;
  const encoded = secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret;
  if (!BASE64.test(encoded)) throw new TypeError('webhook secret must be "whsec_" followed by base64');
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.length === 0) throw new TypeError('webhook secret must not be empty');
  // Signing runs thousands of times a second with a handful of distinct secrets; the bound only
  // keeps a long-lived process from growing without limit after many rotations.
  if (decodedKeys.size >= MAX_CACHED_KEYS) {
    const oldest = decodedKeys.keys().next().value;
    if (oldest !== undefined) decodedKeys.delete(oldest);
  }
  const key = hmacSha256Key(bytes);
  decodedKeys.set(secret, key);
  return key;
}

/**
 * The Standard Webhooks `webhook-signature` header value: `v1,<base64 HMAC-SHA256 of
 * "<msgId>.<timestamp>.<body>">` per secret, space-separated (several secrets during a rotation,
 * so receivers holding either the old or the new secret can verify).
 */
export function signWebhook(secrets: readonly string[], msgId: string, timestampSeconds: number, body: string): string {
  if (secrets.length === 0) throw new TypeError('at least one webhook secret is needed to sign');
  if (!msgId) throw new TypeError('webhook message id must not be empty');
  // Receivers rebuild the signed content from the header text; a fractional or negative
  // timestamp would be printed differently than it is parsed and never verify.
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    throw new TypeError('webhook timestamp must be a whole, non-negative number of seconds');
  }
  const prefix = `${msgId}.${timestampSeconds}.`;
  return secrets
    .map((secret) => 'v1,' + hmacSha256Base64(signingKey(secret), prefix, body))
    .join(' ');
}

/** What {@link webhookHeaders} needs to describe one delivery attempt. */
export interface WebhookHeaderInput {
  /** Active signing secrets of the webhook, newest first (two during a rotation). */
  secrets: readonly string[];
  /** The emit id: the same on every attempt so receivers can deduplicate. */
  msgId: string;
  /** Epoch seconds of this attempt. */
  timestampSeconds: number;
  /** The exact body that is sent. */
  body: string;
  emitterId: string;
  eventName: string;
}

/**
 * Every header a webhook receives: `content-type`, the Standard Webhooks trio (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature`) and `x-pd-emitter-id`, `x-pd-emit-id`,
 * `x-pd-event-name`. Ids and names that cannot travel in a header as they are (control or
 * non-ASCII characters) are sent percent-encoded rather than failing the delivery.
 */
export function webhookHeaders(input: WebhookHeaderInput): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': headerSafe(input.msgId),
    'webhook-timestamp': String(input.timestampSeconds),
    'webhook-signature': signWebhook(input.secrets, headerSafe(input.msgId), input.timestampSeconds, input.body),
    'x-pd-emitter-id': headerSafe(input.emitterId),
    'x-pd-emit-id': headerSafe(input.msgId),
    'x-pd-event-name': headerSafe(input.eventName),
  };
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

function headerSafe(value: string): string {
  return PRINTABLE_ASCII.test(value) ? value : encodeURIComponent(value);
}
