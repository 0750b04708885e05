import type { SandboxHttpResponse } from '@app/sandbox';

/**
 * Headers a component may not set: hop-by-hop headers (RFC 9110 7.6.1) and the framing ones.
 * The server frames the answer itself (it knows the body it sends), so a guest's
 * `transfer-encoding` or `content-length` could only contradict it and desynchronise the
 * connection for whatever proxy sits in front.
 */
export const SERVER_OWNED_RESPONSE_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'content-length',
  'te',
  'trailer',
  'upgrade',
  'http2-settings',
]);

/** An RFC 9110 field name (a token). */
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What Node accepts in a field value: tab, visible ASCII, space and obs-text; so never CR, LF or NUL. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** A guest response ready to send, or why it cannot be sent. */
export type CheckedGuestResponse =
  | { ok: true; status: number; headers: Record<string, string>; body: Buffer | string }
  | { ok: false; problem: string };

/**
 * Checks a component's `respond()` result right before it is sent. The guest runtime already
 * refuses most of this, but a component can tamper with its own runtime, so the host decides:
 * the status is final (200-599), header names are tokens and values hold no CR, LF or NUL, and
 * server-owned headers are dropped. `problem` quotes names with JSON escapes, so it is safe to
 * log on one line; header values are never quoted.
 */
export function checkGuestResponse(res: SandboxHttpResponse): CheckedGuestResponse {
  if (!Number.isInteger(res.status) || res.status < 200 || res.status > 599) {
    return { ok: false, problem: `status ${JSON.stringify(res.status)} is not a final status (200 to 599)` };
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers ?? {})) {
    if (!FIELD_NAME.test(name)) return { ok: false, problem: `header name ${JSON.stringify(name)} is not a valid HTTP field name` };
    if (typeof value !== 'string' || !FIELD_VALUE.test(value)) {
      return { ok: false, problem: `header ${JSON.stringify(name)} has a value with a control character (CR, LF, NUL...) or a character above U+00FF` };
    }
    if (SERVER_OWNED_RESPONSE_HEADERS.has(name.toLowerCase())) continue;
    headers[name] = value;
  }
  const body = res.bodyBase64 !== undefined ? Buffer.from(res.bodyBase64, 'base64') : (res.body ?? '');
  return { ok: true, status: res.status, headers, body };
}
