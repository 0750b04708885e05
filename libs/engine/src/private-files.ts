import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';

/** Mode of every directory Sluice creates in its data directory: owner only. */
export const PRIVATE_DIR_MODE = 0o700;
/** Mode of every file Sluice creates in its data directory: owner read/write only. */
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Creates `dir` (and missing parents) owner-only, and tightens it when it already exists, so
 * nothing inside is reachable by other users whatever the umask. A directory Sluice cannot
 * chmod (owned by another user) is left as it is: the files inside are still 0600.
 */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  try {
    chmodSync(dir, PRIVATE_DIR_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
  }
}

/**
 * Makes sure `file` exists with mode 0600 before another component (SQLite) opens it, and tightens
 * an existing one. SQLite gives a database's `-wal` and `-shm` files the database file's mode, so
 * creating the database file 0600 first covers them too.
 *
 * An existing file is never opened here: closing any descriptor of a file drops every POSIX
 * (fcntl) lock this process holds on it, and the data-dir lock is such a lock.
 */
export function ensurePrivateFile(file: string): void {
  try {
    closeSync(openSync(file, 'wx', PRIVATE_FILE_MODE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  chmodSync(file, PRIVATE_FILE_MODE);
}

/** Tightens to 0600 each of `files` that exists (a database's `-wal` / `-shm` left by an earlier run). */
export function tightenIfPresent(...files: string[]): void {
  for (const file of files) {
    try {
      chmodSync(file, PRIVATE_FILE_MODE);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}
