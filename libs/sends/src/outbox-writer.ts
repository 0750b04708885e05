import { randomUUID } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';

/**
 * Modes of the outbox, the same as every other data file (libs/engine/src/private-files.ts):
 * mails and payloads are tenant data, readable by the server's user only.
 */
const OUTBOX_DIR_MODE = 0o700;
const OUTBOX_FILE_MODE = 0o600;

/**
 * Writes `content` to `<dataDir>/outbox/<segments...>/<fileName>` atomically (a private temporary
 * file, fsynced, renamed into place, the directory fsynced), so a reader never sees half a file
 * and a crash leaves either the whole file or none. Returns the path relative to the data dir.
 *
 * Segments may come from tenant input (an S3 prefix): `.` and `..` are escaped, empty ones
 * dropped, and the result is checked to stay inside the outbox.
 */
export async function writeOutboxFile(dataDir: string, segments: string[], fileName: string, content: string): Promise<string> {
  const outbox = resolve(dataDir, 'outbox');
  const dir = resolve(outbox, ...segments.filter((segment) => segment.length > 0).map(safeSegment));
  const file = join(dir, safeSegment(fileName));
  if (!file.startsWith(outbox + sep)) throw new Error(`outbox path escapes the outbox: ${fileName}`);
  await mkdir(dir, { recursive: true, mode: OUTBOX_DIR_MODE });
  const temporary = join(dir, `.${randomUUID()}.tmp`);
  try {
    const handle = await open(temporary, 'wx', OUTBOX_FILE_MODE);
    try {
      await handle.writeFile(content, 'utf8');
      await handle.datasync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  await syncDirectory(dir);
  return relative(resolve(dataDir), file).split(sep).join('/');
}

/** A path segment that cannot climb or name the directory itself; other characters are kept. */
function safeSegment(segment: string): string {
  if (segment === '.' || segment === '..') return segment.replace(/\./g, '%2E');
  if (segment.includes('/') || segment.includes('\\') || segment.includes('\0')) {
    return segment.replace(/%/g, '%25').replace(/\//g, '%2F').replace(/\\/g, '%5C').replace(/\0/g, '%00');
  }
  return segment;
}

/** Makes the rename durable: a file's new name lives in its directory. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
