/**
 * `<timestamp>-<sendId>.json`: the name of an outbox file and the tail of an S3 key. The UTC
 * timestamp comes first so names sort by time (`2026-11-23T12-34-56-789Z`, no `:` which some
 * file systems and tools refuse); the id keeps two sends of one millisecond apart.
 */
export function sendFileName(at: number, sendId: string): string {
  const timestamp = new Date(at).toISOString().replace(/[:.]/g, '-');
  const id = sendId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 128) || 'send';
  return `${timestamp}-${id}.json`;
}
