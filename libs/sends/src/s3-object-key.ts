import { sendFileName } from './send-file-name';

/** The object key of an S3 send: `<prefix><timestamp>-<sendId>.json` (the prefix is taken as given). */
export function s3ObjectKey(prefix: string, at: number, sendId: string): string {
  return `${prefix}${sendFileName(at, sendId)}`;
}

/**
 * The path of a path-style request, `/<bucket>/<key>`, each key segment URI-encoded as SigV4's
 * canonical URI wants it (RFC 3986: only unreserved characters stay), so that what is signed is
 * exactly what goes on the wire.
 */
export function s3ObjectPath(basePath: string, bucket: string, key: string): string {
  const encodedKey = key.split('/').map(encodeRfc3986).join('/');
  return `${basePath.replace(/\/+$/, '')}/${encodeRfc3986(bucket)}/${encodedKey}`;
}

function encodeRfc3986(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}
