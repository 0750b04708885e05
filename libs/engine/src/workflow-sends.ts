import type { SendsConfig } from '@app/config';
import type { QueuedSend } from '@app/domain';
import type { SandboxSend } from '@app/sandbox';
import { performSend } from '@app/sends';

/** The outcome of one performed `$.send.*` (recorded as `workflow.send_performed.v1`). */
export interface SendResult { ok: boolean; detail?: Record<string, unknown>; error?: string }

/** Where the sends that leave the server are performed (http, email, s3); emit and sse are the runner's own. */
export interface ExternalSendPerformer {
  perform(send: QueuedSend, ctx: { workflowId: string; runId: string; stepIndex: number; sendIndex: number }): Promise<SendResult>;
}

/**
 * `$.send.http | email | s3` through `@app/sends` (component egress guard, SMTP / S3 sinks or the
 * outbox). The send id is stable per (run, step, send), so a send performed again after a crash
 * writes the same outbox file name.
 */
export class SluiceSendPerformer implements ExternalSendPerformer {
  constructor(private readonly cfg: { dataDir: string; componentEgressAllow: string[]; sends: SendsConfig }) {}

  async perform(send: QueuedSend, ctx: { runId: string; stepIndex: number; sendIndex: number }): Promise<SendResult> {
    const outcome = await performSend(send as SandboxSend, {
      dataDir: this.cfg.dataDir, componentEgressAllow: this.cfg.componentEgressAllow, sends: this.cfg.sends,
      sendId: `${ctx.runId}-${ctx.stepIndex}-${ctx.sendIndex}`,
    });
    const { ok, error, ...detail } = outcome;
    return { ok, ...(error ? { error } : {}), detail: detail as Record<string, unknown> };
  }
}
