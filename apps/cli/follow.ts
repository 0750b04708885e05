import { createParser } from 'eventsource-parser';
import { ServerError } from './cli-error';
import type { SluiceApi } from './sluice-api';
import { cellText, time } from './output';

/** One item of `event_summaries` / the source's SSE stream. */
export interface EventSummary {
  id: string;
  indexed_at_ms: number;
  event?: unknown;
  metadata: { emit_id: string; emitter_id: string; name: string; id?: unknown; summary?: string; ts: number };
}

/** One item of `GET /v1/sources/{id}/logs`: a run or a hook, with its console lines. */
export interface SourceLog {
  kind: string;
  at: number;
  ok: boolean;
  trigger?: string;
  error?: { name: string; message: string };
  logs?: { level: string; message: string; ts: number }[];
  emitted?: number;
  duration_ms?: number;
}

/** An event for people: time, channel, summary, then the event on one line. */
export function eventLine(e: EventSummary): string {
  const channel = e.metadata.name ? ` [${e.metadata.name}]` : '';
  const summary = e.metadata.summary ? ` ${e.metadata.summary}:` : '';
  return `${time(e.indexed_at_ms)}${channel}${summary} ${cellText(e.event)}`.trimEnd();
}

/** A run or hook for people: its outcome line, then its console lines indented. */
export function logLines(l: SourceLog): string {
  const what = l.kind === 'run' ? `run (${l.trigger ?? '?'})` : l.kind;
  const outcome = l.ok ? 'ok' : `failed: ${l.error ? `${l.error.name}: ${l.error.message}` : 'error'}`;
  const extra = [l.emitted !== undefined ? `${l.emitted} emitted` : '', l.duration_ms !== undefined ? `${Math.round(l.duration_ms)} ms` : ''].filter(Boolean).join(', ');
  const head = `${time(l.at)} ${what} ${outcome}${extra ? ` (${extra})` : ''}`;
  return [head, ...(l.logs ?? []).map((x) => `  ${x.level === 'log' || x.level === 'info' ? '' : `${x.level}: `}${x.message}`)].join('\n');
}

/**
 * Reads the server-sent events of `path` until `signal` aborts, passing each `data:` as JSON,
 * and reconnects with `Last-Event-ID` when the stream drops, so that nothing kept is lost or
 * repeated. `lastId` undefined: from now on (no replay). A 4xx answer (the source was deleted,
 * the key revoked) ends it with that error.
 */
async function followSse<T>(
  api: SluiceApi, path: string, query: Record<string, string | undefined>, lastId: string | undefined,
  onData: (data: T) => void, signal: AbortSignal, onReconnect?: (why: string) => void,
): Promise<void> {
  while (!signal.aborted) {
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream', ...(lastId !== undefined ? { 'last-event-id': lastId } : {}) };
      const res = await api.open('GET', path, { signal, query }, headers);
      const parser = createParser({
        onEvent(msg) {
          if (msg.id) lastId = msg.id;
          try {
            onData(JSON.parse(msg.data) as T);
          } catch {
            // A non-JSON data line is not an item; keep following.
          }
        },
      });
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
      if (!signal.aborted) onReconnect?.('the stream ended');
    } catch (err) {
      if (signal.aborted) return;
      if (isFinal(err)) throw err;
      onReconnect?.((err as Error).message);
    }
    await pause(1000, signal);
  }
}

/**
 * Follows a source's emits after `afterId` (a summary id; `0-0` for all kept ones) through
 * `GET /v1/sources/{id}/sse`; `channel` keeps only that channel's emits.
 */
export function followEvents(api: SluiceApi, sourceId: string, afterId: string, onEvent: (e: EventSummary) => void, signal: AbortSignal, onReconnect?: (why: string) => void, channel?: string): Promise<void> {
  return followSse(api, `/v1/sources/${encodeURIComponent(sourceId)}/sse`, { event_name: channel }, afterId, onEvent, signal, onReconnect);
}

/** An answer that retrying cannot change (the source was deleted, the key revoked): a 4xx other than 429. */
function isFinal(err: unknown): boolean {
  return err instanceof ServerError && err.status >= 400 && err.status < 500 && err.status !== 429;
}

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((r) => {
    const t = setTimeout(r, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      r();
    }, { once: true });
  });
}

/**
 * Follows a source's runs and hooks through `GET /v1/sources/{id}/logs/sse`: each entry once,
 * oldest first, from now on, or with `includeExisting` first the kept ones (the last 100).
 */
export function followLogs(api: SluiceApi, sourceId: string, onLog: (l: SourceLog) => void, signal: AbortSignal, opts: { includeExisting?: boolean; onError?: (why: string) => void } = {}): Promise<void> {
  return followSse(api, `/v1/sources/${encodeURIComponent(sourceId)}/logs/sse`, {}, opts.includeExisting ? '0' : undefined, onLog, signal, opts.onError);
}
