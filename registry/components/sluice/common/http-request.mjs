// What the HTTP webhook sources emit and show for one request.

/** The request as the source received it: method, path, query, headers and body (parsed and raw). */
export function fullRequest(event) {
  return {
    method: event.method,
    path: event.path,
    url: event.url,
    query: event.query ?? {},
    headers: event.headers ?? {},
    body: event.body,
    bodyRaw: event.bodyRaw,
  };
}

/** Only the body: parsed JSON or form when it was one, else the raw text. */
export function payloadOnly(event) {
  if (event.body !== undefined && event.body !== null && event.body !== "") return event.body;
  return event.bodyRaw ?? "";
}

/** `POST /orders`: the line shown for the event in listings. */
export function requestSummary(event) {
  return `${event.method} ${event.path || "/"}`;
}
