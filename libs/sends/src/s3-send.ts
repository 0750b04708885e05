import type { S3Config } from '@app/config';
import { performOutbound } from '@app/delivery';
import type { SandboxSend } from '@app/sandbox';
import type * as Aws4 from 'aws4';
import { writeOutboxFile } from './outbox-writer';
import { s3ObjectKey, s3ObjectPath } from './s3-object-key';
import { RESPONSE_EXCERPT_BYTES, SendContext, SendOutcome } from './send-outcome';
import { invalidS3Send } from './send-validation';

type S3SendParams = Extract<SandboxSend, { kind: 's3' }>['params'];

/**
 * `$.send.s3`: the payload as JSON, PUT as `<prefix><timestamp>-<id>.json` into `bucket` on the
 * S3-compatible `SLUICE_S3_ENDPOINT` (path-style, signed with AWS Signature V4 by `aws4`).
 * Without an endpoint it is kept in `<data dir>/outbox/s3/<bucket>/<key>`.
 *
 * The endpoint is the operator's: the request goes through the outbound client (pinned address,
 * timeout, capped response) with that one host allowed, not through the tenants' allow-list.
 */
export async function performS3Send(params: S3SendParams, ctx: SendContext, at: number): Promise<SendOutcome> {
  const started = performance.now();
  const invalid = invalidS3Send(params);
  if (invalid) return { kind: 's3', ok: false, error: invalid, destination: 's3', durationMs: 0, at };
  const key = s3ObjectKey(params.prefix, at, ctx.sendId);
  const body = JSON.stringify(params.payload ?? null);
  const s3 = ctx.sends.s3;
  const outcome = s3 ? await putObject(s3, params.bucket, key, body, ctx.sends.timeoutMs) : await keepInOutbox(ctx.dataDir, params.bucket, key, body);
  return { kind: 's3', at, ...outcome, durationMs: Math.round(performance.now() - started) };
}

type PartialOutcome = Pick<SendOutcome, 'ok' | 'error' | 'destination' | 'status' | 'responseExcerpt'>;

async function putObject(s3: S3Config, bucket: string, key: string, body: string, timeoutMs: number): Promise<PartialOutcome> {
  const endpoint = new URL(s3.endpoint);
  const path = s3ObjectPath(endpoint.pathname, bucket, key);
  const destination = `s3://${bucket}/${key} at ${endpoint.origin}`;
  // Loaded on the first S3 send: most servers never make one.
  const { sign } = require('aws4') as typeof Aws4;
  const signed = sign(
    {
      host: endpoint.host,
      path,
      method: 'PUT',
      service: 's3',
      region: s3.region,
      body,
      headers: { 'Content-Type': 'application/json' },
    },
    { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  );
  try {
    const response = await performOutbound(
      { url: `${endpoint.origin}${path}`, method: 'PUT', headers: stringHeaders(signed.headers), body, timeoutMs, maxResponseBytes: RESPONSE_EXCERPT_BYTES },
      { allow: [endpoint.hostname.replace(/^\[|\]$/g, '')], allowVariable: 'SLUICE_S3_ENDPOINT' },
    );
    const ok = response.status >= 200 && response.status < 300;
    return {
      ok,
      status: response.status,
      destination,
      ...(ok ? {} : { error: `s3 send: HTTP ${response.status}${s3ErrorCode(response.body)}`, responseExcerpt: response.body.toString('utf8') }),
    };
  } catch (error) {
    return { ok: false, error: `s3 send: ${(error as Error).message}`, destination };
  }
}

async function keepInOutbox(dataDir: string, bucket: string, key: string, body: string): Promise<PartialOutcome> {
  const segments = key.split('/');
  const fileName = segments.pop() as string;
  try {
    const destination = await writeOutboxFile(dataDir, ['s3', bucket, ...segments], fileName, body);
    return { ok: true, destination };
  } catch (error) {
    return { ok: false, error: `s3 send: could not write the outbox: ${(error as Error).message}`, destination: `outbox/s3/${bucket}` };
  }
}

function stringHeaders(headers: Record<string, unknown> | undefined): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) flat[name] = String(value);
  return flat;
}

/** ` (NoSuchBucket)` from an S3 XML error answer, when there is one. */
function s3ErrorCode(body: Buffer): string {
  const match = /<Code>([^<]{1,100})<\/Code>/.exec(body.toString('utf8'));
  return match ? ` (${match[1]})` : '';
}
