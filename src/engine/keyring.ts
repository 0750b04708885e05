import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SecretBox } from '@app/domain';

/**
 * Loads the server's secret key from `<dataDir>/keys/master.key`, creating it (mode 0600) on first
 * start. The key lives outside the event store, so a copy of the log alone reveals no secret.
 */
export function loadSecretBox(dataDir: string): SecretBox {
  const dir = join(dataDir, 'keys');
  const file = join(dir, 'master.key');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!existsSync(file)) {
    writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
  }
  chmodSync(file, 0o600);
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  return new SecretBox(key);
}
