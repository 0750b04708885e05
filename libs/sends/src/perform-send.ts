import type { SandboxSend } from '@app/sandbox';
import { performEmailSend } from './email-send';
import { performHttpSend } from './http-send';
import { performS3Send } from './s3-send';
import { SendContext, SendOutcome } from './send-outcome';

/**
 * Performs one `$.send.http | email | s3` of a workflow step, after the step succeeded, and says
 * what happened. Never rejects: a refused, invalid or failed send is an outcome with `ok: false`
 * and `error`, to be recorded in the run like a successful one.
 *
 * `emit` and `sse` are not performed here: they feed the workflow engine's own streams.
 */
export async function performSend(send: SandboxSend, ctx: SendContext): Promise<SendOutcome> {
  const at = (ctx.now ?? Date.now)();
  const kind = (send as { kind?: unknown } | null)?.kind;
  try {
    switch (send.kind) {
      case 'http':
        return await performHttpSend(send.params, ctx, at);
      case 'email':
        return await performEmailSend(send.params, ctx, at);
      case 's3':
        return await performS3Send(send.params, ctx, at);
      case 'emit':
      case 'sse':
        return refused(send.kind, `$.send.${send.kind} is performed by the workflow engine, not by performSend`, at);
      default:
        return refused(String(kind), `unknown send kind "${String(kind)}" (expected http, email, s3, emit or sse)`, at);
    }
  } catch (error) {
    // The kinds report their own failures; this is the last guard for a bug, so that one bad
    // send cannot make a whole run's sends go unrecorded.
    return refused(String(kind), `${String(kind)} send failed: ${(error as Error).message}`, at);
  }
}

function refused(kind: string, error: string, at: number): SendOutcome {
  return { kind, ok: false, error, destination: kind, durationMs: 0, at };
}
