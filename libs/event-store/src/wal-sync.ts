import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statfsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadNativeLibrary } from '@app/native';

/** The magic number `statfs` gives for ext2, ext3 and ext4 (one driver, one number). */
const EXT_SUPER_MAGIC = 0xef53;

/**
 * The sync of the WAL that leaves out its inode where that is durable (see
 * `libs/event-store/native/wal-sync.c` for why and when): one per store, over the store's own
 * descriptor of the WAL and a descriptor of an empty file beside the database that is never
 * written (`<file>-flush`), whose `fdatasync` is the disk's cache flush.
 */
export interface WalSync {
  /** Syncs on the calling thread; true when it was a light sync. Throws an error with the errno's `code`. */
  sync(): boolean;
  /** The same on libuv's thread pool. */
  syncAsync(callback: (err: NodeJS.ErrnoException | null, light: boolean) => void): void;
  /**
   * Starts writing the WAL's dirty pages back without waiting: called right after a commit that a
   * sync will follow, so the disk has them, or has started on them, by the time the sync waits.
   */
  writeback(): void;
  /**
   * Starts the next sync of what was written so far (light or full, by the same rule as `sync`)
   * on the kernel's io_uring workers and returns true, so the disk works while the caller goes
   * on; {@link finish} then waits for it. False when nothing was started (the ring is unavailable
   * or not asked for, see `ringUnavailable`): the caller syncs with `sync` instead.
   */
  start(): boolean;
  /** Waits for the sync {@link start} started; true when it was light, or throws with the errno's `code`. */
  finish(): boolean;
  /** Why syncs are not started on the ring (an errno's name, or `not asked for`), or null. */
  ringUnavailable(): string | null;
  /**
   * Syncs made so far: light ones (data and the disk's flush), full ones (`fdatasync` of the WAL),
   * and of either kind those started on the ring.
   */
  counts(): { light: number; full: number; started: number };
  /** Closes the flush file's descriptor (after the last sync; the WAL's stays the store's). */
  close(): void;
}

interface NativeWalSync {
  open(walFd: number, flushFd: number, ring: boolean): unknown;
  lightAllowed(handle: unknown): boolean;
  sync(handle: unknown): boolean;
  syncAsync(handle: unknown, callback: (err: NodeJS.ErrnoException | null, light: boolean) => void): void;
  writeback(handle: unknown): void;
  start(handle: unknown): boolean;
  finish(handle: unknown): boolean;
  ringUnavailable(handle: unknown): string | null;
  counts(handle: unknown): [number, number, number];
}

let native: NativeWalSync | null | undefined;

function load(): NativeWalSync | null {
  if (native === undefined) native = loadNativeLibrary<NativeWalSync>('wal-sync.node', 'event store: the WAL is synced with fdatasync alone');
  return native;
}

/**
 * The options of the mount that holds `path`, as `/proc/self/mountinfo` lists them (the mount's
 * and its filesystem's), or undefined when that cannot be read. A mount is found by the device
 * number of `path` (the last listed wins, as the last mount over a place hides those before).
 */
export function mountOptionsOf(path: string, mountinfo?: string): string[] | undefined {
  let text: string;
  try {
    text = readFileSync(mountinfo ?? '/proc/self/mountinfo', 'utf8');
  } catch {
    return undefined;
  }
  const device = deviceOf(path);
  let options: string[] | undefined;
  for (const line of text.split('\n')) {
    // id parent major:minor root mountpoint options [optional fields] - fstype source superoptions
    const fields = line.split(' ');
    if (fields[2] !== device) continue;
    const dash = fields.indexOf('-');
    if (dash < 0) continue;
    options = [...(fields[5] ?? '').split(','), ...(fields[dash + 3] ?? '').split(',')];
  }
  return options;
}

/** The device holding `path` as `/proc/self/mountinfo` writes it, `major:minor` (Linux's encoding of `st_dev`). */
export function deviceOf(path: string): string {
  const dev = statSync(path).dev;
  return `${(dev >>> 8) & 0xfff}:${(dev & 0xff) | ((dev >>> 12) & 0xfff00)}`;
}

/**
 * A new directory under the first of `bases` where the light sync is allowed (for the tests and
 * the bench, which need one), or the reasons none is.
 */
export function lightSyncDir(bases: string[], prefix: string): { dir?: string; reason?: string } {
  const reasons: string[] = [];
  for (const base of bases) {
    const dir = mkdtempSync(join(base, prefix));
    const reason = whyNotLight(dir);
    if (reason === undefined) return { dir };
    reasons.push(`${base}: ${reason}`);
    rmSync(dir, { recursive: true, force: true });
  }
  return { reason: reasons.join('; ') };
}

/**
 * Why the WAL of `file` must be synced with `fdatasync` alone, or undefined when the light sync
 * is durable there: ext2/3/4, which overwrite a file's blocks in place, not mounted with
 * `data=journal` (the data would be in the journal, which the light sync does not commit). The
 * file's own data-journalling flag is checked by the library. `mountinfo`: where the mounts are
 * listed (tests).
 */
export function whyNotLight(file: string, mountinfo?: string): string | undefined {
  let type: number;
  try {
    type = statfsSync(file).type;
  } catch (error) {
    return `statfs failed (${(error as Error).message})`;
  }
  if (type !== EXT_SUPER_MAGIC) return `not on ext2/3/4 (filesystem type 0x${type.toString(16)}), which may not overwrite in place`;
  const options = mountOptionsOf(file, mountinfo);
  if (!options) return `the mount options cannot be read (${mountinfo ?? '/proc/self/mountinfo'})`;
  if (options.includes('data=journal')) return 'mounted with data=journal';
  return undefined;
}

/**
 * The light sync for the WAL open as `walFd`, the WAL of the database `file`; null (and the reason
 * in `why`) where it would not be durable or the library is not built: the store then syncs with
 * `fdatasync` as before. `ring`: whether `start` may start syncs on an io_uring (default false, as
 * the store's `walSync: 'light'`).
 */
export function openWalSync(file: string, walFd: number, why: (reason: string) => void = () => {}, ring = false): WalSync | null {
  const lib = load();
  if (!lib) {
    why('the library is not built');
    return null;
  }
  const reason = whyNotLight(`${file}-wal`);
  if (reason !== undefined) {
    why(reason);
    return null;
  }
  // Never written: its fdatasync has nothing to write and issues the disk's cache flush. Created
  // private, as the database's own files are.
  const flushFd = openSync(`${file}-flush`, 'a', 0o600);
  let handle: unknown;
  try {
    handle = lib.open(walFd, flushFd, ring);
    if (!lib.lightAllowed(handle)) {
      why('the WAL journals its own data (chattr +j)');
      closeSync(flushFd);
      return null;
    }
  } catch (error) {
    closeSync(flushFd);
    throw error;
  }
  let closed = false;
  return {
    sync: () => lib.sync(handle),
    syncAsync: (callback) => lib.syncAsync(handle, callback),
    writeback: () => lib.writeback(handle),
    start: () => lib.start(handle),
    finish: () => lib.finish(handle),
    ringUnavailable: () => lib.ringUnavailable(handle),
    counts: () => {
      const [light, full, started] = lib.counts(handle);
      return { light, full, started };
    },
    close: () => {
      if (closed) return;
      closed = true;
      closeSync(flushFd);
    },
  };
}
