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
 * Follows a source's emits after `afterId` (a summary id; `0-0` for all kept ones) through
 * `GET /v1/sources/{id}/sse` until `signal` aborts, reconnecting with `Last-Event-ID` when the
 * stream drops, so that nothing is lost or repeated; `channel` keeps only that channel's emits. A 4xx answer (the source was deleted) ends
 * it with that error.
 */
export async function followEvents(api: SluiceApi, sourceId: string, afterId: string, onEvent: (e: EventSummary) => void, signal: AbortSignal, onReconnect?: (why: string) => void, channel?: string): Promise<void> {
  let lastId = afterId;
  while (!signal.aborted) {
    try {
      const res = await api.open('GET', `/v1/sources/${encodeURIComponent(sourceId)}/sse`, { signal, query: { event_name: channel } }, { accept: 'text/event-stream', 'last-event-id': lastId });
      const parser = createParser({
        onEvent(msg) {
          if (msg.id) lastId = msg.id;
          try {
            onEvent(JSON.parse(msg.data) as EventSummary);
          } catch {
            // A non-JSON data line is not an emit; keep following.
          }
        },
      });
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
      if (!signal.aborted) onReconnect?.('the event stream ended');
    } catch (err) {
      if (signal.aborted) return;
      if (isFinal(err)) throw err;
      onReconnect?.((err as Error).message);
    }
    await pause(1000, signal);
  }
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

/** A stable identity for a log item: the list has no ids, and the same run always reads the same. */
const logKey = (l: SourceLog) => JSON.stringify(l);

/**
 * Follows a source's runs and hooks by polling `GET /v1/sources/{id}/logs` every `everyMs`:
 * each new item is passed once, oldest first. Items present at the start are `seen` unless
 * `includeExisting`. Errors are retried, except a 4xx answer, which ends it with that error.
 */
export async function followLogs(api: SluiceApi, sourceId: string, onLog: (l: SourceLog) => void, signal: AbortSignal, opts: { everyMs?: number; includeExisting?: boolean; onError?: (why: string) => void } = {}): Promise<void> {
  const seen = new Set<string>();
  let first = true;
  while (!signal.aborted) {
    try {
      const items = (await api.get<{ data: SourceLog[] }>(`/v1/sources/${encodeURIComponent(sourceId)}/logs`)).data;
      for (const l of [...items].reverse()) {
        const k = logKey(l);
        if (seen.has(k)) continue;
        seen.add(k);
        if (!first || opts.includeExisting) onLog(l);
      }
      first = false;
    } catch (err) {
      if (signal.aborted) return;
      if (isFinal(err)) throw err;
      opts.onError?.((err as Error).message);
    }
    await pause(opts.everyMs ?? 1000, signal);
  }
}
