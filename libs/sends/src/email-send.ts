import type { SmtpConfig } from '@app/config';
import type { SandboxSend } from '@app/sandbox';
import type * as Nodemailer from 'nodemailer';
import { writeOutboxFile } from './outbox-writer';
import { sendFileName } from './send-file-name';
import { SendContext, SendOutcome } from './send-outcome';
import { invalidEmailSend } from './send-validation';

type EmailSendParams = Extract<SandboxSend, { kind: 'email' }>['params'];

/**
 * `$.send.email`: a mail with the step's subject, text and html to the account's address (or
 * `SLUICE_SMTP_TO`) from `SLUICE_SMTP_FROM`, through `SLUICE_SMTP_URL`. Without SMTP it is kept
 * as one JSON file in `<data dir>/outbox/email/`, so nothing a workflow sends is lost.
 *
 * The SMTP server is the operator's, so the connection does not pass the component egress guard.
 */
export async function performEmailSend(params: EmailSendParams, ctx: SendContext, at: number): Promise<SendOutcome> {
  const started = performance.now();
  const invalid = invalidEmailSend(params);
  if (invalid) return { kind: 'email', ok: false, error: invalid, destination: 'email', durationMs: 0, at };
  const smtp = ctx.sends.smtp;
  const outcome = smtp ? await sendThroughSmtp(params, smtp, ctx) : await keepInOutbox(params, ctx, at);
  return { kind: 'email', at, ...outcome, durationMs: Math.round(performance.now() - started) };
}

type PartialOutcome = Pick<SendOutcome, 'ok' | 'error' | 'destination'>;

async function sendThroughSmtp(params: EmailSendParams, smtp: SmtpConfig, ctx: SendContext): Promise<PartialOutcome> {
  const to = ctx.recipient ?? smtp.to;
  const server = describeSmtpServer(smtp.url);
  if (!to) return { ok: false, error: 'email send: no recipient (the account has no address and SLUICE_SMTP_TO is not set)', destination: server };
  const destination = `${server} to ${to}`;
  // Loaded here, on the first mail over SMTP: nodemailer costs the server about 10 MB of RSS.
  const { createTransport } = require('nodemailer') as typeof Nodemailer;
  const transport = createTransport({
    url: smtp.url,
    connectionTimeout: ctx.sends.timeoutMs,
    greetingTimeout: ctx.sends.timeoutMs,
    socketTimeout: ctx.sends.timeoutMs,
  });
  try {
    const info = await transport.sendMail({ from: smtp.from, to, subject: params.subject, text: params.text, html: params.html });
    if (info.rejected.length > 0) return { ok: false, error: `email send: the server refused ${info.rejected.join(', ')}`, destination };
    return { ok: true, destination };
  } catch (error) {
    return { ok: false, error: `email send: ${(error as Error).message}`, destination };
  } finally {
    transport.close();
  }
}

async function keepInOutbox(params: EmailSendParams, ctx: SendContext, at: number): Promise<PartialOutcome> {
  const message = {
    id: ctx.sendId,
    at: new Date(at).toISOString(),
    ...(ctx.recipient ? { to: ctx.recipient } : {}),
    subject: params.subject,
    ...(params.text !== undefined ? { text: params.text } : {}),
    ...(params.html !== undefined ? { html: params.html } : {}),
  };
  try {
    const destination = await writeOutboxFile(ctx.dataDir, ['email'], sendFileName(at, ctx.sendId), `${JSON.stringify(message, null, 2)}\n`);
    return { ok: true, destination };
  } catch (error) {
    return { ok: false, error: `email send: could not write the outbox: ${(error as Error).message}`, destination: 'outbox/email' };
  }
}

/** `smtp://host:port` without the credentials the URL carries. */
function describeSmtpServer(raw: string): string {
  const url = new URL(raw);
  const port = url.port || (url.protocol === 'smtps:' ? '465' : '587');
  return `${url.protocol}//${url.hostname}:${port}`;
}
