import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Another live process holds the data directory. */
export class DataDirInUseError extends Error {
  constructor(readonly dataDir: string, readonly pid: number) {
    super(`${dataDir} is in use by a running Sluice server (pid ${pid}); stop it first`);
    this.name = 'DataDirInUseError';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One writer per data directory: two servers on one log would both deliver every event and
 * fight over stream revisions. The holder's pid is kept in `<dataDir>/server.pid`; a file left
 * by a process that is gone (a crash, SIGKILL) is taken over.
 */
export function assertDataDirFree(dataDir: string): void {
  const file = join(dataDir, 'server.pid');
  let pid: number;
  try {
    pid = Number(readFileSync(file, 'utf8').trim());
  } catch {
    return;
  }
  if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) throw new DataDirInUseError(dataDir, pid);
}

/** Claims the data directory for this process; returns the release function. */
export function lockDataDir(dataDir: string): () => void {
  assertDataDirFree(dataDir);
  const file = join(dataDir, 'server.pid');
  writeFileSync(file, `${process.pid}\n`);
  return () => {
    try {
      if (Number(readFileSync(file, 'utf8').trim()) === process.pid) rmSync(file);
    } catch {
      // Already gone.
    }
  };
}
