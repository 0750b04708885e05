import type { ServerResponse } from 'node:http';

/** What an endpoint (a source's or a workflow's) answers: a JSON value, or the text or bytes of a custom response. */
export interface EndpointAnswer {
  status: number;
  headers?: Record<string, string>;
  json?: unknown;
  raw?: string | Buffer;
}

/** The 429 of an endpoint that has too much waiting (`error` says what); retrying a second later is the right move. */
export function rateLimitedAnswer(error: string): EndpointAnswer {
  return { status: 429, headers: { 'retry-after': '1' }, json: { error, code: 'rate_limited' } };
}

/**
 * Writes an endpoint's answer. Both ways a request reaches an endpoint use it (the fast path in
 * front of Fastify and the Fastify routes, which hand it the raw response), so they answer alike
 * by construction. JSON goes as `application/json; charset=utf-8`; a custom response's text as
 * `text/plain; charset=utf-8` and its bytes as `application/octet-stream`, unless the component
 * named a content type, which is sent as it named it. Header names are lower-cased (as Fastify
 * sends them); a 204 has no body, content type or length.
 */
export function writeEndpointAnswer(res: ServerResponse, answer: EndpointAnswer): void {
  if (res.destroyed || res.headersSent) return;
  try {
    write(res, answer);
  } catch (error) {
    // Custom responses are checked before they get here (checkGuestResponse), so this is a bug;
    // the connection is dropped rather than left waiting for an answer that will not come.
    console.error('sluice: an endpoint answer could not be written', error);
    res.destroy();
  }
}

function write(res: ServerResponse, answer: EndpointAnswer): void {
  res.statusCode = answer.status;
  let typed = false;
  for (const [k, v] of Object.entries(answer.headers ?? {})) {
    const name = k.toLowerCase();
    res.setHeader(name, v);
    if (name === 'content-type') typed = true;
  }
  if (answer.status === 204) {
    res.removeHeader('content-type');
    res.end();
    return;
  }
  let body: string | Buffer;
  if (answer.raw === undefined) {
    body = JSON.stringify(answer.json);
    if (!typed) res.setHeader('content-type', 'application/json; charset=utf-8');
  } else {
    body = answer.raw;
    if (!typed) res.setHeader('content-type', typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/octet-stream');
  }
  res.setHeader('content-length', typeof body === 'string' ? Buffer.byteLength(body) : body.length);
  res.end(body);
}
