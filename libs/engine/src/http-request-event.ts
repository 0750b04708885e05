import type { HttpRequestReceived } from '@app/domain';
/** The `event` an HTTP source's run receives, as recorded in its inbox. */
export interface HttpRequestEvent {
  method: string;
  /** The path after the endpoint (`/hello/world`, `/` for the endpoint itself): never the endpoint key. */
  path: string;
  /** The full public URL: SLUICE_PUBLIC_URL + `/e/<key>` + path + query string. */
  url: string;
  query: Record<string, unknown>;
  headers: Record<string, string>;
  bodyRaw: string;
  body: unknown;
}

/**
 * The JSON text of a request's recorded data, `{ sourceId, requestId, ...event }`, made from the
 * event's own text (`JSON.stringify(event)`), which the run's invocation carries too: the request
 * is serialised once for the log and the sandbox. Equal to `JSON.stringify` of that object, since
 * an event has neither key and a member's text does not depend on what surrounds it. The
 * pending-requests read model reads the two ids from the start of this text (`requestKeysOf`):
 * keep them first.
 */
export function requestDataJson(sourceId: string, requestId: string, eventJson: string): string {
  return `{"sourceId":${JSON.stringify(sourceId)},"requestId":${JSON.stringify(requestId)}${eventJson.length > 2 ? `,${eventJson.slice(1)}` : '}'}`;
}

/** The endpoint prefix `/e/<key>` of a raw request target, and what follows it. */
const ENDPOINT_TARGET = /^(\/e\/[^/?#]*)([^?#]*)(\?[^#]*)?/;

/**
 * `path` and `url` of a request to an endpoint, from its raw target (`/e/<key>/hello?x=1`) and
 * the public base URL. Nothing is decoded: the run sees what was sent.
 */
export function endpointLocation(target: string, publicUrl: string): { path: string; url: string } {
  const m = ENDPOINT_TARGET.exec(target);
  if (!m) return { path: target || '/', url: `${publicUrl}${target}` };
  const [, endpoint, rest, search = ''] = m;
  return { path: rest || '/', url: `${publicUrl}${endpoint}${rest}${search}` };
}

/**
 * The run's event from a recorded `source.http_request_received.v1`, identical to the one the
 * live run got. Records written before `url` existed carry the endpoint in `path`; their path
 * and url are derived the same way as for a live request.
 */
export function httpEventFromRecord(data: HttpRequestReceived, publicUrl: string): HttpRequestEvent {
  let { path, url } = data;
  if (url === undefined) {
    const query = new URLSearchParams(data.query as Record<string, string>).toString();
    ({ path, url } = endpointLocation(`${path ?? '/'}${query ? `?${query}` : ''}`, publicUrl));
  }
  return {
    method: data.method,
    path: path ?? '/',
    url,
    query: data.query ?? {},
    headers: data.headers ?? {},
    bodyRaw: data.bodyRaw ?? '',
    body: data.body,
  };
}
