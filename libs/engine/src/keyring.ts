import { closeSync, fsyncSync, linkSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SecretBox } from '@app/domain';
import { ensurePrivateDir, PRIVATE_FILE_MODE, tightenIfPresent } from './private-files';

/** The key file holds 32 random bytes in base64. */
const KEY_BYTES = 32;

/**
 * Publishes a new key at `file` unless one is there: the key is written and fsynced under a
 * unique temporary name, then hard-linked to `file`. link() never replaces an existing file and
 * makes the complete file appear at once, so concurrent first starts agree on one key (the
 * first link wins, the others read it) and no reader ever sees a half-written key.
 */
function publishNewKey(dir: string, file: string): void {
  const temp = join(dir, `.master.key.${process.pid}.${randomBytes(6).toString('hex')}`);
  const fd = openSync(temp, 'wx', PRIVATE_FILE_MODE);
  try {
    writeSync(fd, randomBytes(KEY_BYTES).toString('base64'));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    rmSync(temp, { force: true });
  }
  // The directory entry must be durable before anything is sealed with the key.
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/**
 * Loads the server's secret key from `<dataDir>/keys/master.key`, creating it (mode 0600, in a
 * 0700 directory) on first start. The key lives outside the event store, so a copy of the log
 * alone reveals no secret. A key file that is not 32 bytes of base64 is an error, never replaced:
 * replacing it would make every sealed secret unreadable.
 */
export function loadSecretBox(dataDir: string): SecretBox {
  const dir = join(dataDir, 'keys');
  const file = join(dir, 'master.key');
  ensurePrivateDir(dir);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    publishNewKey(dir, file);
    text = readFileSync(file, 'utf8');
  }
  tightenIfPresent(file);
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== KEY_BYTES) throw new Error(`${file} does not hold a ${KEY_BYTES}-byte base64 key; restore it from a backup`);
  return new SecretBox(key);
}
