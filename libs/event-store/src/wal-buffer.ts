import Database from 'better-sqlite3';
import { nativeLibraryFile } from '@app/native';

/**
 * The SQLite extension that writes a commit's WAL frames in one write call instead of two per
 * frame (`libs/event-store/native/wal-buffer.c`, compiled by `scripts/build.mjs` into
 * `dist/native/wal-buffer.so`). Once loaded it is SQLite's default VFS for every connection the
 * process opens afterwards (the store's, the checkpoint thread's, the read side's); it changes
 * nothing but how the bytes of WAL frames reach the file, and when (see the C file's header).
 */
export interface WalBufferState {
  loaded: boolean;
  /** Why it is not loaded. */
  reason?: string;
  /** The shared object loaded, if any. */
  file?: string;
}

const ENTRY_POINT = 'sqlite3_walbuffer_init';
let state: WalBufferState | undefined;

/**
 * Loads the extension once per process (later calls return the first outcome). Never throws: a
 * missing or unloadable file leaves SQLite's own VFS in place, which writes the same bytes with
 * more calls, and the reason is printed once.
 */
export function loadWalBuffer(): WalBufferState {
  if (state) return state;
  const file = nativeLibraryFile('wal-buffer.so');
  if (!file) {
    state = { loaded: false, reason: 'dist/native/wal-buffer.so is not built (npm run build compiles it)' };
  } else {
    const loader = new Database(':memory:');
    try {
      // better-sqlite3 takes the entry point as a second argument; its types omit it.
      (loader as unknown as { loadExtension(path: string, entryPoint: string): void }).loadExtension(file, ENTRY_POINT);
      state = { loaded: true, file };
    } catch (error) {
      state = { loaded: false, reason: `${file} could not be loaded: ${(error as Error).message}` };
    } finally {
      loader.close();
    }
  }
  if (!state.loaded) console.error(`event store: WAL frames are written one call each (${state.reason})`);
  return state;
}

/** The extension's counters for WAL writes in this process (null when it is not loaded). */
export function walBufferStats(db: Database.Database): { writesAsked: number; writesMade: number; flushes: number; lockFlushes: number } | null {
  if (!state?.loaded) return null;
  try {
    return JSON.parse(db.prepare('SELECT sluice_wal_buffer_stats()').pluck().get() as string);
  } catch {
    return null;
  }
}
