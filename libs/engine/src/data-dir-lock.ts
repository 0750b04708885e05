import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ensurePrivateDir, ensurePrivateFile, PRIVATE_FILE_MODE, tightenIfPresent } from './private-files';

/** Another live process holds the data directory. */
export class DataDirInUseError extends Error {
  constructor(readonly dataDir: string, readonly pid?: number) {
    super(`${dataDir} is in use by a running Sluice server or admin command${pid ? ` (pid ${pid})` : ''}; stop it first`);
    this.name = 'DataDirInUseError';
  }
}

/** The held lock of a data directory. */
export interface DataDirLock {
  /** Gives the directory up (idempotent). Dying does the same. */
  release(): void;
}

/** The lock file: an empty SQLite database this process holds an exclusive lock on. */
export const LOCK_FILE = 'server.lock';
/** How long an attempt waits out a competing attempt before it is refused. */
export const LOCK_WAIT_MS = 1000;
/** The holder's pid, written after the lock is taken; only for the error message, never trusted. */
export const LOCK_HOLDER_FILE = 'server.pid';

function holderPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, LOCK_HOLDER_FILE), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One writer per data directory: two servers on one log would both deliver every event and fight
 * over stream revisions, and an admin command must not rebuild the read models under a server.
 *
 * The lock is an exclusive SQLite transaction held open on `<dataDir>/server.lock`, i.e. a POSIX
 * (fcntl) lock that the kernel grants to one process at a time, atomically, and drops when the
 * process dies however it dies (SIGKILL, OOM): no stale state to clean up, no pid that may be
 * reused. fcntl locks are not inherited by children, so the sandbox workers of a killed server
 * do not keep it. A second attempt (in any process, this one included) waits `LOCK_WAIT_MS` for
 * the lock and then fails with `DataDirInUseError`.
 *
 * Why wait at all: SQLite takes the file's locks in steps (SHARED, then RESERVED, then EXCLUSIVE).
 * Two attempts at the same moment can both hold SHARED; one then gets RESERVED and needs the
 * other's SHARED gone for EXCLUSIVE. Without a busy timeout, it gives up at once, and so does the
 * other, and neither process gets the directory (two servers started together both exited). With
 * one, the loser drops its SHARED lock on failing and the winner's retry succeeds; the loser keeps
 * retrying until the timeout and is refused.
 *
 * While the lock is held, nothing in this process may open and close `server.lock` by other means:
 * closing any descriptor of the file would drop the lock.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  ensurePrivateDir(dataDir);
  const file = join(dataDir, LOCK_FILE);
  ensurePrivateFile(file);
  const db = new Database(file, { timeout: LOCK_WAIT_MS });
  try {
    // BEGIN EXCLUSIVE takes the EXCLUSIVE lock on the file itself (rollback journal mode), which
    // also keeps any other connection from reading it.
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    const code = (err as { code?: string }).code;
    if (code === 'SQLITE_BUSY') throw new DataDirInUseError(dataDir, holderPid(dataDir));
    // Sluice never writes to the lock file, so content means someone else put it there.
    if (code === 'SQLITE_NOTADB') throw new Error(`${file} is not a Sluice lock file (Sluice keeps it empty); remove it and start again`);
    throw err;
  }
  const pidFile = join(dataDir, LOCK_HOLDER_FILE);
  writeFileSync(pidFile, `${process.pid}\n`, { mode: PRIVATE_FILE_MODE });
  tightenIfPresent(pidFile);
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      rmSync(pidFile, { force: true });
      db.exec('ROLLBACK');
      db.close();
    },
  };
}
