import { performOutbound } from '@app/delivery';
import type { SandboxSend } from '@app/sandbox';
import { RESPONSE_EXCERPT_BYTES, SendContext, SendOutcome } from './send-outcome';
import { invalidHttpSend } from './send-validation';

type HttpSendParams = Extract<SandboxSend, { kind: 'http' }>['params'];

/**
 * `$.send.http`: one request through the egress guard with the component allow-list
 * (`SLUICE_COMPONENT_EGRESS_ALLOW`): the URL is tenant input, exactly like a `fetch` of its code.
 * Redirects are not followed. Only the status and the first RESPONSE_EXCERPT_BYTES of the body
 * are kept; the connection is dropped rather than read further.
 */
export async function performHttpSend(params: HttpSendParams, ctx: SendContext, at: number): Promise<SendOutcome> {
  const started = performance.now();
  const invalid = invalidHttpSend(params);
  // Each outcome is one literal (a spread of a shared part followed by new members would give
  // every outcome a hidden class of its own in V8 11).
  if (invalid) return { kind: 'http', at, ok: false, error: invalid, destination: describeUnparsed(params), durationMs: 0 };
  const method = params.method.toUpperCase();
  let url: URL;
  try {
    url = withQuery(new URL(params.url), params.params);
  } catch {
    return { kind: 'http', at, ok: false, error: 'http send: invalid URL', destination: method, durationMs: 0 };
  }
  const destination = `${method} ${url.origin}${url.pathname}`;
  const { body, contentType } = encodeBody(params.data);
  const headers: Record<string, string> = { ...(params.headers ?? {}) };
  if (contentType && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) headers['content-type'] = contentType;
  try {
    const response = await performOutbound(
      { url: url.toString(), method, headers, body: method === 'HEAD' ? undefined : body, timeoutMs: ctx.sends.timeoutMs, maxResponseBytes: RESPONSE_EXCERPT_BYTES },
      { allow: ctx.componentEgressAllow, allowVariable: 'SLUICE_COMPONENT_EGRESS_ALLOW' },
    );
    return {
      kind: 'http',
      at,
      ok: response.status >= 200 && response.status < 400,
      status: response.status,
      ...(response.status >= 400 ? { error: `HTTP ${response.status}` } : {}),
      destination,
      durationMs: elapsed(started),
      responseExcerpt: response.body.toString('utf8'),
    };
  } catch (error) {
    return { kind: 'http', at, ok: false, error: `http send: ${(error as Error).message}`, destination, durationMs: elapsed(started) };
  }
}

/** `params` become the query string (appended to one the URL has), like axios' `params`. */
function withQuery(url: URL, query: Record<string, unknown> | undefined): URL {
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) {
      url.searchParams.append(name, typeof item === 'object' ? JSON.stringify(item) : String(item));
    }
  }
  return url;
}

/** A string is sent as it is (text/plain unless a header says otherwise); anything else as JSON. */
function encodeBody(data: unknown): { body?: string; contentType?: string } {
  if (data === undefined) return {};
  if (typeof data === 'string') return { body: data, contentType: 'text/plain; charset=utf-8' };
  return { body: JSON.stringify(data), contentType: 'application/json' };
}

function describeUnparsed(params: unknown): string {
  const record = (typeof params === 'object' && params !== null ? params : {}) as { method?: unknown };
  return typeof record.method === 'string' ? record.method.toUpperCase() : 'http';
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}
