import type { SendsConfig } from '@app/config';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import { performSend, SendContext } from '../src';

interface ReceivedMail {
  from: string;
  to: string[];
  user: string | undefined;
  raw: string;
}

/** A real SMTP server on 127.0.0.1 that takes one user's password and keeps every message. */
async function startSmtpServer(): Promise<{ port: number; mails: ReceivedMail[]; close: () => Promise<void> }> {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    // The test has no certificate; nodemailer would try STARTTLS if it were offered.
    hideSTARTTLS: true,
    allowInsecureAuth: true,
    onAuth(auth, _session, callback) {
      if (auth.username === 'mailer' && auth.password === 's3cret pass') callback(null, { user: auth.username });
      else callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          user: session.user as string | undefined,
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { port, mails, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('performSend email', () => {
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let dataDir: string;
  beforeAll(async () => {
    smtp = await startSmtpServer();
  });
  beforeEach(() => {
    smtp.mails.splice(0);
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-sends-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));
  afterAll(() => smtp.close());

  function context(sends: SendsConfig, extra: Partial<SendContext> = {}): SendContext {
    return { dataDir, componentEgressAllow: [], sends, sendId: 'run_1-notify-0', ...extra };
  }

  const smtpUrl = (password = 's3cret%20pass') => `smtp://mailer:${password}@127.0.0.1:${smtp.port}`;

  it('delivers the mail through SLUICE_SMTP_URL with its credentials, from SLUICE_SMTP_FROM to SLUICE_SMTP_TO', async () => {
    const sends: SendsConfig = { timeoutMs: 10_000, smtp: { url: smtpUrl(), from: 'Sluice <sluice@example.test>', to: 'ops@example.test' } };
    const outcome = await performSend({ kind: 'email', params: { subject: 'Order 42 shipped', text: 'The parcel left the warehouse.' } }, context(sends));
    expect(outcome).toMatchObject({ kind: 'email', ok: true, destination: `smtp://127.0.0.1:${smtp.port} to ops@example.test` });
    expect(JSON.stringify(outcome)).not.toContain('s3cret');
    expect(smtp.mails).toHaveLength(1);
    const [mail] = smtp.mails;
    expect(mail).toMatchObject({ from: 'sluice@example.test', to: ['ops@example.test'], user: 'mailer' });
    expect(mail.raw).toMatch(/^Subject: Order 42 shipped\r$/m);
    expect(mail.raw).toMatch(/^From: Sluice <sluice@example\.test>\r$/m);
    expect(mail.raw).toContain('The parcel left the warehouse.');
    // Nothing goes to the outbox when SMTP is configured.
    expect(() => readdirSync(join(dataDir, 'outbox'))).toThrow(/ENOENT/);
  });

  it('sends to the account address when there is one', async () => {
    const sends: SendsConfig = { timeoutMs: 10_000, smtp: { url: smtpUrl(), from: 'sluice@example.test', to: 'ops@example.test' } };
    const outcome = await performSend({ kind: 'email', params: { subject: 'Hi', html: '<p>Hello <b>there</b></p>' } }, context(sends, { recipient: 'owner@example.test' }));
    expect(outcome.ok).toBe(true);
    expect(smtp.mails[0].to).toEqual(['owner@example.test']);
    expect(smtp.mails[0].raw).toContain('<p>Hello <b>there</b></p>');
  });

  it('records a refused login as a failed send', async () => {
    const sends: SendsConfig = { timeoutMs: 10_000, smtp: { url: smtpUrl('wrong'), from: 'sluice@example.test', to: 'ops@example.test' } };
    const outcome = await performSend({ kind: 'email', params: { subject: 'Hi', text: 'x' } }, context(sends));
    expect(outcome).toMatchObject({ ok: false, error: expect.stringMatching(/^email send: .*Invalid username or password/) });
    expect(smtp.mails).toHaveLength(0);
  });

  it('fails with a clear error when there is no recipient at all', async () => {
    const sends: SendsConfig = { timeoutMs: 10_000, smtp: { url: smtpUrl(), from: 'sluice@example.test' } };
    const outcome = await performSend({ kind: 'email', params: { subject: 'Hi', text: 'x' } }, context(sends));
    expect(outcome).toMatchObject({ ok: false, error: expect.stringMatching(/SLUICE_SMTP_TO/) });
    expect(smtp.mails).toHaveLength(0);
  });

  it('without SMTP writes the mail to <data dir>/outbox/email/ as one private JSON file per send', async () => {
    const at = Date.UTC(2026, 10, 23, 12, 34, 56, 789);
    const first = await performSend(
      { kind: 'email', params: { subject: 'Daily report', text: 'All green.', html: '<p>All green.</p>' } },
      context({ timeoutMs: 10_000 }, { now: () => at }),
    );
    const second = await performSend({ kind: 'email', params: { subject: 'Second' } }, context({ timeoutMs: 10_000 }, { sendId: 'run_1-notify-1' }));
    expect(first).toMatchObject({ kind: 'email', ok: true, destination: 'outbox/email/2026-11-23T12-34-56-789Z-run_1-notify-0.json', at });
    expect(second.ok).toBe(true);
    const dir = join(dataDir, 'outbox', 'email');
    expect(readdirSync(dir).sort()).toEqual([first.destination.split('/').pop(), second.destination.split('/').pop()].sort());
    const file = join(dataDir, first.destination);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      id: 'run_1-notify-0', at: '2026-11-23T12:34:56.789Z', subject: 'Daily report', text: 'All green.', html: '<p>All green.</p>',
    });
    expect(smtp.mails).toHaveLength(0);
  });

  it('refuses a subject with a line break (header injection) or a missing subject', async () => {
    for (const params of [{ subject: 'Hi\r\nBcc: victim@example.test', text: 'x' }, { subject: '', text: 'x' }, { text: 'x' }]) {
      const outcome = await performSend({ kind: 'email', params: params as { subject: string } }, context({ timeoutMs: 10_000 }));
      expect(outcome).toMatchObject({ ok: false, error: expect.stringMatching(/^email send: subject/) });
    }
    expect(() => readdirSync(join(dataDir, 'outbox'))).toThrow(/ENOENT/);
  });
});
