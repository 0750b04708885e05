import type { SandboxSend } from '@app/sandbox';

type Params<K extends SandboxSend['kind']> = Extract<SandboxSend, { kind: K }>['params'];

/** An HTTP method token (RFC 9110): what Node would accept on the request line. */
const METHOD = /^[A-Za-z!#$%&'*+.^_`|~-]+$/;

/**
 * S3 bucket naming rules (3-63 of lower-case letters, digits, dots and hyphens, starting and
 * ending with a letter or digit). They also keep a bucket name from being a path segment such
 * as `..` when it names an outbox directory.
 */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * The host's re-check of a send the guest already validated: the guest runs tenant code, which
 * may have replaced the runtime's checks, so nothing is trusted. Returns the reason or null.
 */
export function invalidHttpSend(params: Params<'http'>): string | null {
  if (!isRecord(params)) return 'http send: params must be an object';
  if (typeof params.method !== 'string' || !METHOD.test(params.method)) return 'http send: method must be an HTTP method such as GET or POST';
  if (typeof params.url !== 'string' || params.url.length === 0) return 'http send: url must be a non-empty string';
  if (params.headers !== undefined) {
    if (!isRecord(params.headers)) return 'http send: headers must be an object of strings';
    for (const [name, value] of Object.entries(params.headers)) {
      if (typeof value !== 'string') return `http send: header "${name}" must be a string`;
    }
  }
  if (params.params !== undefined && !isRecord(params.params)) return 'http send: params must be an object';
  return null;
}

export function invalidEmailSend(params: Params<'email'>): string | null {
  if (!isRecord(params)) return 'email send: params must be an object';
  if (typeof params.subject !== 'string' || params.subject.length === 0) return 'email send: subject must be a non-empty string';
  if (/[\r\n]/.test(params.subject)) return 'email send: subject must be one line';
  if (params.text !== undefined && typeof params.text !== 'string') return 'email send: text must be a string';
  if (params.html !== undefined && typeof params.html !== 'string') return 'email send: html must be a string';
  return null;
}

export function invalidS3Send(params: Params<'s3'>): string | null {
  if (!isRecord(params)) return 's3 send: params must be an object';
  if (typeof params.bucket !== 'string' || !BUCKET.test(params.bucket) || params.bucket.includes('..')) {
    return 's3 send: bucket must be an S3 bucket name (3-63 lower-case letters, digits, dots and hyphens)';
  }
  if (typeof params.prefix !== 'string') return 's3 send: prefix must be a string';
  if (params.prefix.length > 512) return 's3 send: prefix must be at most 512 characters';
  // Control characters make keys no tool can show; S3 refuses some of them anyway.
  if (/[\u0000-\u001f\u007f]/.test(params.prefix)) return 's3 send: prefix must not contain control characters';
  if (!('payload' in params)) return 's3 send: payload is required';
  return null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
