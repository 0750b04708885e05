import { performOutbound } from '@app/delivery';
import type { QueuedSend } from '@app/domain';

/** The outcome of one performed `$.send.*` (recorded as `workflow.send_performed.v1`). */
export interface SendResult { ok: boolean; detail?: Record<string, unknown>; error?: string }

/** Performs the sends that leave the server (http, email, s3); emit and sse are the runner's own. */
export interface ExternalSendPerformer {
  perform(send: QueuedSend, ctx: { workflowId: string; runId: string; stepName: string }): Promise<SendResult>;
}

/**
 * `$.send.http` through the component egress guard (the step's code chose the URL, so the
 * component allow-list applies, not the server's). Email and S3 are the sends helper's
 * (`@app/sends`); until it is merged they are recorded as not performed.
 */
export class HttpOnlySendPerformer implements ExternalSendPerformer {
  constructor(private readonly componentEgressAllow: string[]) {}

  async perform(send: QueuedSend): Promise<SendResult> {
    if (send.kind !== 'http') return { ok: false, error: `$.send.${send.kind} is not available on this server yet` };
    const p = send.params as { method?: string; url: string; headers?: Record<string, string>; params?: Record<string, unknown>; data?: unknown };
    try {
      const url = new URL(p.url);
      for (const [k, v] of Object.entries(p.params ?? {})) url.searchParams.append(k, String(v));
      const body = p.data === undefined ? undefined : typeof p.data === 'string' ? p.data : JSON.stringify(p.data);
      const headers: Record<string, string> = { ...(p.headers ?? {}) };
      if (body !== undefined && typeof p.data !== 'string' && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
        headers['content-type'] = 'application/json';
      }
      const res = await performOutbound(
        { url: url.toString(), method: (p.method ?? 'POST').toUpperCase(), headers, body, timeoutMs: 15_000, maxResponseBytes: 64 * 1024 },
        { allow: this.componentEgressAllow, allowVariable: 'SLUICE_COMPONENT_EGRESS_ALLOW' },
      );
      const ok = res.status >= 200 && res.status < 300;
      return { ok, detail: { status: res.status }, ...(ok ? {} : { error: `answered HTTP ${res.status}` }) };
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
  }
}
