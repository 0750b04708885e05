// Small helpers shared by Sluice's built-in components.

/**
 * The value at a dotted path (`data.items`, `meta.next`, `results.0.id`) inside parsed JSON, or
 * undefined when a step is missing. An empty path is the value itself. Only own properties are
 * read, so a path like `__proto__` never reaches the prototype.
 */
export function valueAt(value, path) {
  if (path === undefined || path === null || path === "") return value;
  let current = value;
  for (const step of String(path).split(".")) {
    if (current === null || typeof current !== "object" || !Object.prototype.hasOwnProperty.call(current, step)) return undefined;
    current = current[step];
  }
  return current;
}

/** Hex SHA-256 of a string (Web Crypto, available in the sandbox). */
export async function sha256Hex(text) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A timestamp in ms from an ISO / RFC 2822 date string or a number, or undefined. */
export function toMillis(value) {
  if (value === undefined || value === null || value === "") return undefined;
  const ms = typeof value === "number" ? value : Date.parse(String(value));
  return Number.isFinite(ms) ? ms : undefined;
}

/** Throws unless the response is a 2xx, naming the URL and status, so a failed fetch fails the run. */
export function assertOk(res, url) {
  if (!res.ok) throw new Error(`${url} answered HTTP ${res.status}`);
}

/** Text cut to `max` characters, with whether it was cut. */
export function truncated(text, max) {
  return text.length > max ? { text: text.slice(0, max), truncated: true } : { text, truncated: false };
}
