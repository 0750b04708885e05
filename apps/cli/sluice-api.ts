import { CliError, EXIT, ServerError } from './cli-error';

/** Options of one REST call. */
export interface CallOptions {
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  signal?: AbortSignal;
}

/** Why a request never got an answer, in words a user recognises. */
function unreachableReason(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code ?? (err as { code?: string }).code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'unknown host';
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') return 'timed out';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection reset';
  return cause?.message ?? (err as Error).message;
}

/**
 * The REST API of one Sluice server, with one account's key. Every failure becomes a CliError
 * of one line: the server's `error` and `code`, or "cannot reach <url>" naming the server.
 */
export class SluiceApi {
  constructor(readonly baseUrl: string, private readonly apiKey: string) {}

  /** A request's URL, with the key left out (for links printed to the user). */
  url(path: string, query: CallOptions['query'] = {}): URL {
    const u = new URL(`${this.baseUrl}${path}`);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, String(v));
    return u;
  }

  /** Opens a request and returns the raw response (for streams); HTTP errors are thrown as ServerError. */
  async open(method: string, path: string, opts: CallOptions = {}, headers: Record<string, string> = {}): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(this.url(path, opts.query), {
        method,
        headers: { authorization: `Bearer ${this.apiKey}`, ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: opts.signal,
      });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      throw new CliError(`cannot reach the Sluice server at ${this.baseUrl} (${unreachableReason(err)}); is it running? (SLUICE_URL or pd login --url)`, EXIT.unreachable);
    }
    if (!res.ok) {
      const text = await res.text().catch(() => '');
      let body: { error?: string; code?: string; details?: unknown } = {};
      try {
        body = JSON.parse(text);
      } catch {
        // Not our API's JSON (a proxy's page, a wrong URL): the status says it all.
      }
      const message = body.error ?? (res.status === 404 ? `${path} not found at ${this.baseUrl}` : `HTTP ${res.status} from ${this.baseUrl}`);
      throw new ServerError(res.status, body.code ?? `http_${res.status}`, message, body.details);
    }
    return res;
  }

  /** One JSON call; resolves with the parsed body. */
  async call<T = any>(method: string, path: string, opts: CallOptions = {}): Promise<T> {
    const res = await this.open(method, path, opts);
    const text = await res.text();
    try {
      return (text ? JSON.parse(text) : {}) as T;
    } catch {
      throw new CliError(`${this.baseUrl} answered ${method} ${path} with something that is not JSON; is SLUICE_URL a Sluice server?`);
    }
  }

  get<T = any>(path: string, query?: CallOptions['query']): Promise<T> {
    return this.call<T>('GET', path, { query });
  }

  post<T = any>(path: string, body?: unknown, query?: CallOptions['query']): Promise<T> {
    return this.call<T>('POST', path, { body, query });
  }

  put<T = any>(path: string, body?: unknown): Promise<T> {
    return this.call<T>('PUT', path, { body });
  }

  del<T = any>(path: string, query?: CallOptions['query']): Promise<T> {
    return this.call<T>('DELETE', path, { query });
  }

  /** Every item of a paginated list (`limit=100`, following `end_cursor`), up to `max`. */
  async all<T = Record<string, any>>(path: string, max = 1000): Promise<T[]> {
    const out: T[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.get<{ data: T[]; page_info?: { end_cursor?: string | null; count?: number } }>(path, { limit: 100, after });
      out.push(...page.data);
      after = page.page_info?.end_cursor ?? undefined;
      if (!after || page.data.length < 100 || out.length >= max) return out;
    }
  }
}
