import { STATUS_CODES } from 'node:http';
import { performance } from 'node:perf_hooks';
import { EgressError, EgressPolicy } from './delivery.types';
import { performPost } from './outbound-http';
import { isDelivered } from './retry-schedule';
import { webhookHeaders } from './webhook-signer';

/** Response bytes read from a receiver: its body is never recorded, so only enough to keep the connection reusable. */
const MAX_RECEIVER_RESPONSE_BYTES = 64 * 1024;

/** One delivery attempt of one event to one webhook. */
export interface WebhookDeliveryRequest {
  url: string;
  /** Active signing secrets, newest first (two during a rotation). */
  secrets: readonly string[];
  /** The emit id: `webhook-id` and `x-pd-emit-id`, the same on every attempt. */
  msgId: string;
  /** The event as JSON text, sent byte for byte as signed. */
  body: string;
  emitterId: string;
  eventName: string;
  timeoutMs: number;
  policy: EgressPolicy;
  /** Clock in epoch ms for `webhook-timestamp`; default Date.now. */
  now?: () => number;
}

/** Outcome of one attempt. */
export interface WebhookDeliveryResult {
  /** True exactly when the receiver answered 2xx. */
  ok: boolean;
  /** The receiver's status, when it answered at all. */
  statusCode?: number;
  /** Why the attempt failed, in words fit for the deliveries list; absent when ok. */
  error?: string;
  /**
   * Cause of a failure without a response: the EgressError code, `signing` for an unusable
   * secret, `invalid_request` for anything else the request itself got wrong.
   */
  errorCode?: EgressError['code'] | 'signing' | 'invalid_request';
  durationMs: number;
  /** The receiver's `Retry-After`, surfaced only on 429 and 503 answers. */
  retryAfter?: string;
}

/**
 * Makes one signed POST of an event to a webhook, with a fresh `webhook-timestamp`. Never
 * throws: network failures, refusals, timeouts and non-2xx answers come back as `ok: false` with
 * an error text, so the caller only has to record the outcome and schedule the next attempt.
 * Redirects are not followed.
 */
export async function deliverWebhook(request: WebhookDeliveryRequest): Promise<WebhookDeliveryResult> {
  const startedAt = performance.now();
  const elapsed = (): number => Math.round(performance.now() - startedAt);
  let headers: Record<string, string>;
  try {
    headers = webhookHeaders({
      secrets: request.secrets,
      msgId: request.msgId,
      timestampSeconds: Math.floor((request.now ?? Date.now)() / 1000),
      body: request.body,
      emitterId: request.emitterId,
      eventName: request.eventName,
    });
  } catch (error) {
    return { ok: false, error: `cannot sign the delivery: ${(error as Error).message}`, errorCode: 'signing', durationMs: elapsed() };
  }
  headers['user-agent'] = 'Sluice-Webhooks/1';
  try {
    const response = await performPost(
      {
        url: request.url,
        headers,
        body: request.body,
        timeoutMs: request.timeoutMs,
        maxResponseBytes: MAX_RECEIVER_RESPONSE_BYTES,
      },
      request.policy,
    );
    const result: WebhookDeliveryResult = { ok: isDelivered(response.status), statusCode: response.status, durationMs: elapsed() };
    if (!result.ok) result.error = describeStatus(response.status);
    const retryAfter = response.headers['retry-after'];
    if ((response.status === 429 || response.status === 503) && retryAfter) result.retryAfter = retryAfter;
    return result;
  } catch (error) {
    if (error instanceof EgressError) return { ok: false, error: error.message, errorCode: error.code, durationMs: elapsed() };
    return { ok: false, error: `invalid request: ${(error as Error).message}`, errorCode: 'invalid_request', durationMs: elapsed() };
  }
}

function describeStatus(status: number): string {
  const text = `HTTP ${status}${STATUS_CODES[status] ? ` ${STATUS_CODES[status]}` : ''}`;
  return status >= 300 && status < 400 ? `${text} (redirects are not followed)` : text;
}
