import { createHash } from 'node:crypto';

/** sha256 hex of an API key: keys are stored only as hashes. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
