/*
 * sluice wal-buffer: an SQLite VFS shim that writes a commit's WAL frames with one write call.
 *
 * SQLite writes each WAL frame as two pwrite calls (its 24-byte header, then the page), so a
 * commit of 15 pages costs 30 system calls, each of them an unaligned write into the page cache.
 * This shim sits over the default VFS (unix) and, for WAL files only, gathers contiguous writes in
 * memory and hands them to the real file in one call. Everything else passes through unchanged.
 *
 * When gathered bytes reach the file (the rules that keep every reader and every crash seeing
 * what it would without the shim):
 *  - at the write that completes a commit frame (a frame header whose "database size after
 *    commit" field is not zero, then its page): SQLite writes the commit frame last, before it
 *    publishes the commit in the WAL index, so no other connection can look for a frame that is
 *    still here, and COMMIT returns with every frame in the file (the store's fdatasync follows);
 *  - before any other operation on the WAL file (read, sync, size, truncate, file control,
 *    close), and before a write that is not contiguous with what is gathered;
 *  - whenever the database file's connection takes or releases a WAL-index lock (xShmLock),
 *    which ends every write transaction in normal locking mode, committed or rolled back;
 *  - before the gathered bytes would pass WB_MAX_BYTES (128 KiB, the most the unix VFS writes in
 *    one call), so a big transaction is written in 128 KiB steps.
 * A write that follows a read of the WAL (SQLite's rewrite of frame checksums after a
 * transaction overwrote its own frames, which reads each frame before rewriting its header) is
 * not gathered but written through, so the last of those rewrites never waits for a later call.
 * A failed write is reported by the call that flushed, inside the same transaction, as SQLite's
 * own would have been.
 *
 * Loaded as an extension (`sqlite3_walbuffer_init`); registers itself as the default VFS, named
 * "sluice-walbuf", for every connection opened afterwards in the process, and adds the SQL
 * function sluice_wal_buffer_stats() (JSON: WAL writes asked for, writes made, flushes, and flushes
 * that a WAL-index lock made) to them.
 */
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1
#include <string.h>

#define WB_NAME "sluice-walbuf"
/* The unix VFS writes at most 0x1ffff bytes per call (seekAndWriteFd masks the length). */
#define WB_MAX_BYTES 0x1ffff
#define WB_FRAME_HEADER 24

typedef struct WbFile WbFile;
struct WbFile {
  sqlite3_file base;
  sqlite3_file *real;      /* the file of the VFS below, allocated right after this struct */
  int isWal;
  WbFile *wal;             /* for a main database file: its open WAL file, if any */
  WbFile *db;              /* for a WAL file: its main database file */
  unsigned char *buf;      /* gathered bytes, for the file from `off` (WB_MAX_BYTES allocated at the first write) */
  int len;
  sqlite3_int64 off;
  int commitPending;       /* a commit frame's header was written: flush after the next write */
  int lastWasRead;         /* the last operation on this WAL file was a read */
  sqlite3_int64 fileEnd;   /* how far the WAL file has been written (its size when opened, then grown by writes, cut by truncation) */
};

static sqlite3_vfs *wbReal = 0;
static sqlite3_vfs wbVfs;
static sqlite3_io_methods wbMethods;
static volatile sqlite3_int64 statWritesAsked = 0, statWritesMade = 0, statFlushes = 0, statLockFlushes = 0;

#define REAL(f) (((WbFile *)(f))->real)
#define COUNT(v) __atomic_add_fetch(&(v), 1, __ATOMIC_RELAXED)

/*
 * Writes gathered bytes. Over the part of the file written before, in one call. Past it, one
 * call per 4 KiB page: a write that extends the file makes the page cache allocate its folios,
 * sized by the write (Linux 6.x, ext4), and a large folio that a later commit writes a few bytes
 * of is dirtied, and written back, whole. SQLite's own writes are a page or less, so its WAL has
 * 4 KiB folios; written in one call, the WAL's folios grew to the size of a commit and the
 * bytes written back per commit by about a sixth (measured with /proc/self/io write_bytes).
 * Once the WAL has been written through (it is reused from its start after a checkpoint), every
 * commit takes one call.
 */
static int wbWriteOut(WbFile *p, const unsigned char *data, int amt, sqlite3_int64 ofst) {
  int rc = SQLITE_OK;
  int done = 0;
  if (ofst < p->fileEnd) {
    int below = ofst + amt <= p->fileEnd ? amt : (int)(p->fileEnd - ofst);
    rc = p->real->pMethods->xWrite(p->real, data, below, ofst);
    COUNT(statWritesMade);
    done = below;
  }
  while (rc == SQLITE_OK && done < amt) {
    sqlite3_int64 at = ofst + done;
    int piece = (int)((at / 4096 + 1) * 4096 - at);
    if (piece > amt - done) piece = amt - done;
    rc = p->real->pMethods->xWrite(p->real, data + done, piece, at);
    COUNT(statWritesMade);
    done += piece;
  }
  if (rc == SQLITE_OK && ofst + amt > p->fileEnd) p->fileEnd = ofst + amt;
  return rc;
}

static int wbFlush(WbFile *p) {
  int rc = SQLITE_OK;
  if (p->len > 0) {
    rc = wbWriteOut(p, p->buf, p->len, p->off);
    COUNT(statFlushes);
    p->len = 0;
  }
  p->commitPending = 0;
  return rc;
}

static int wbClose(sqlite3_file *f) {
  WbFile *p = (WbFile *)f;
  int rc = SQLITE_OK;
  if (p->isWal) {
    rc = wbFlush(p);
    if (p->db && p->db->wal == p) p->db->wal = 0;
  } else if (p->wal) {
    p->wal->db = 0;
  }
  sqlite3_free(p->buf);
  p->buf = 0;
  int rc2 = p->real->pMethods->xClose(p->real);
  return rc != SQLITE_OK ? rc : rc2;
}

static int wbRead(sqlite3_file *f, void *out, int amt, sqlite3_int64 ofst) {
  WbFile *p = (WbFile *)f;
  if (p->isWal) {
    int rc = wbFlush(p);
    if (rc != SQLITE_OK) return rc;
    p->lastWasRead = 1;
  }
  return p->real->pMethods->xRead(p->real, out, amt, ofst);
}

static int wbWrite(sqlite3_file *f, const void *data, int amt, sqlite3_int64 ofst) {
  WbFile *p = (WbFile *)f;
  if (!p->isWal) return p->real->pMethods->xWrite(p->real, data, amt, ofst);
  COUNT(statWritesAsked);
  const unsigned char *bytes = (const unsigned char *)data;
  int commitHeader = amt == WB_FRAME_HEADER && (bytes[4] | bytes[5] | bytes[6] | bytes[7]) != 0;
  int completesCommit = p->commitPending;
  int rc;
  if (p->len > 0 && (ofst != p->off + p->len || p->len + amt > WB_MAX_BYTES)) {
    int keep = p->commitPending;
    rc = wbFlush(p);
    if (rc != SQLITE_OK) return rc;
    p->commitPending = keep;
  }
  if (p->lastWasRead || amt > WB_MAX_BYTES) {
    /* Written through: see the header comment. */
    p->lastWasRead = 0;
    p->commitPending = commitHeader;
    return wbWriteOut(p, bytes, amt, ofst);
  }
  if (!p->buf) {
    /* Room for the most one flush writes; without it, the write goes through as SQLite made it. */
    p->buf = (unsigned char *)sqlite3_malloc(WB_MAX_BYTES);
    if (!p->buf) {
      p->commitPending = commitHeader;
      return wbWriteOut(p, bytes, amt, ofst);
    }
  }
  if (p->len == 0) p->off = ofst;
  memcpy(p->buf + p->len, data, amt);
  p->len += amt;
  if (completesCommit && !commitHeader) return wbFlush(p);
  p->commitPending = commitHeader;
  return SQLITE_OK;
}

static int wbTruncate(sqlite3_file *f, sqlite3_int64 size) {
  WbFile *p = (WbFile *)f;
  if (p->isWal) {
    int rc = wbFlush(p);
    if (rc != SQLITE_OK) return rc;
    rc = p->real->pMethods->xTruncate(p->real, size);
    if (rc == SQLITE_OK && size < p->fileEnd) p->fileEnd = size;
    return rc;
  }
  return p->real->pMethods->xTruncate(p->real, size);
}

static int wbSync(sqlite3_file *f, int flags) {
  WbFile *p = (WbFile *)f;
  if (p->isWal) {
    int rc = wbFlush(p);
    if (rc != SQLITE_OK) return rc;
  }
  return p->real->pMethods->xSync(p->real, flags);
}

static int wbFileSize(sqlite3_file *f, sqlite3_int64 *size) {
  WbFile *p = (WbFile *)f;
  if (p->isWal) {
    int rc = wbFlush(p);
    if (rc != SQLITE_OK) return rc;
  }
  return p->real->pMethods->xFileSize(p->real, size);
}

static int wbLock(sqlite3_file *f, int lock) { return REAL(f)->pMethods->xLock(REAL(f), lock); }
static int wbUnlock(sqlite3_file *f, int lock) { return REAL(f)->pMethods->xUnlock(REAL(f), lock); }
static int wbCheckReservedLock(sqlite3_file *f, int *out) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out); }

static int wbFileControl(sqlite3_file *f, int op, void *arg) {
  WbFile *p = (WbFile *)f;
  if (p->isWal) {
    int rc = wbFlush(p);
    if (rc != SQLITE_OK) return rc;
  }
  if (op == SQLITE_FCNTL_VFSNAME && p->real->pMethods->xFileControl(p->real, op, arg) == SQLITE_OK) {
    char *below = *(char **)arg;
    *(char **)arg = sqlite3_mprintf("%s/%z", WB_NAME, below);
    return SQLITE_OK;
  }
  return p->real->pMethods->xFileControl(p->real, op, arg);
}

static int wbSectorSize(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int wbDeviceCharacteristics(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }

static int wbShmMap(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **out) {
  return REAL(f)->pMethods->xShmMap(REAL(f), pg, pgsz, extend, out);
}

static int wbShmLock(sqlite3_file *f, int offset, int n, int flags) {
  WbFile *p = (WbFile *)f;
  if (p->wal) {
    if (p->wal->len > 0) COUNT(statLockFlushes);
    int rc = wbFlush(p->wal);
    if (rc != SQLITE_OK) return rc;
  }
  return p->real->pMethods->xShmLock(p->real, offset, n, flags);
}

static void wbShmBarrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int wbShmUnmap(sqlite3_file *f, int del) { return REAL(f)->pMethods->xShmUnmap(REAL(f), del); }

static int wbFetch(sqlite3_file *f, sqlite3_int64 ofst, int amt, void **out) {
  WbFile *p = (WbFile *)f;
  if (p->isWal) {
    int rc = wbFlush(p);
    if (rc != SQLITE_OK) return rc;
  }
  return p->real->pMethods->xFetch(p->real, ofst, amt, out);
}

static int wbUnfetch(sqlite3_file *f, sqlite3_int64 ofst, void *ptr) {
  return REAL(f)->pMethods->xUnfetch(REAL(f), ofst, ptr);
}

static int wbOpen(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *outFlags) {
  WbFile *p = (WbFile *)f;
  memset(p, 0, sizeof(*p));
  p->real = (sqlite3_file *)&p[1];
  int rc = wbReal->xOpen(wbReal, name, p->real, flags, outFlags);
  if (rc != SQLITE_OK || p->real->pMethods == 0) {
    p->base.pMethods = 0;
    return rc;
  }
  if (p->real->pMethods->iVersion < 3) {
    /* The shim wraps version 3 methods only; a VFS below with fewer is used as it is. */
    p->real->pMethods->xClose(p->real);
    p->base.pMethods = 0;
    return SQLITE_CANTOPEN;
  }
  p->isWal = (flags & SQLITE_OPEN_WAL) != 0;
  if (p->isWal && p->real->pMethods->xFileSize(p->real, &p->fileEnd) != SQLITE_OK) p->fileEnd = 0;
  if (p->isWal && name) {
    WbFile *db = (WbFile *)sqlite3_database_file_object(name);
    if (db && db->base.pMethods == &wbMethods) {
      p->db = db;
      db->wal = p;
    }
  }
  p->base.pMethods = &wbMethods;
  return SQLITE_OK;
}

static int wbDelete(sqlite3_vfs *v, const char *name, int dirSync) { return wbReal->xDelete(wbReal, name, dirSync); }
static int wbAccess(sqlite3_vfs *v, const char *name, int flags, int *out) { return wbReal->xAccess(wbReal, name, flags, out); }
static int wbFullPathname(sqlite3_vfs *v, const char *name, int n, char *out) { return wbReal->xFullPathname(wbReal, name, n, out); }
static void *wbDlOpen(sqlite3_vfs *v, const char *path) { return wbReal->xDlOpen(wbReal, path); }
static void wbDlError(sqlite3_vfs *v, int n, char *msg) { wbReal->xDlError(wbReal, n, msg); }
static void (*wbDlSym(sqlite3_vfs *v, void *h, const char *sym))(void) { return wbReal->xDlSym(wbReal, h, sym); }
static void wbDlClose(sqlite3_vfs *v, void *h) { wbReal->xDlClose(wbReal, h); }
static int wbRandomness(sqlite3_vfs *v, int n, char *out) { return wbReal->xRandomness(wbReal, n, out); }
static int wbSleep(sqlite3_vfs *v, int us) { return wbReal->xSleep(wbReal, us); }
static int wbCurrentTime(sqlite3_vfs *v, double *out) { return wbReal->xCurrentTime(wbReal, out); }
static int wbGetLastError(sqlite3_vfs *v, int n, char *out) { return wbReal->xGetLastError(wbReal, n, out); }
static int wbCurrentTimeInt64(sqlite3_vfs *v, sqlite3_int64 *out) { return wbReal->xCurrentTimeInt64(wbReal, out); }
static int wbSetSystemCall(sqlite3_vfs *v, const char *name, sqlite3_syscall_ptr fn) { return wbReal->xSetSystemCall(wbReal, name, fn); }
static sqlite3_syscall_ptr wbGetSystemCall(sqlite3_vfs *v, const char *name) { return wbReal->xGetSystemCall(wbReal, name); }
static const char *wbNextSystemCall(sqlite3_vfs *v, const char *name) { return wbReal->xNextSystemCall(wbReal, name); }

static void statsFunction(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  char *text = sqlite3_mprintf("{\"writesAsked\":%lld,\"writesMade\":%lld,\"flushes\":%lld,\"lockFlushes\":%lld}",
    (long long)__atomic_load_n(&statWritesAsked, __ATOMIC_RELAXED),
    (long long)__atomic_load_n(&statWritesMade, __ATOMIC_RELAXED),
    (long long)__atomic_load_n(&statFlushes, __ATOMIC_RELAXED),
    (long long)__atomic_load_n(&statLockFlushes, __ATOMIC_RELAXED));
  sqlite3_result_text(ctx, text, -1, sqlite3_free);
}

static int addStatsFunction(sqlite3 *db, char **err, const sqlite3_api_routines *api) {
  (void)err;
  (void)api;
  return sqlite3_create_function(db, "sluice_wal_buffer_stats", 0, SQLITE_UTF8, 0, statsFunction, 0, 0);
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_walbuffer_init(sqlite3 *db, char **err, const sqlite3_api_routines *api) {
  SQLITE_EXTENSION_INIT2(api);
  if (sqlite3_vfs_find(WB_NAME) == 0) {
    sqlite3_vfs *below = sqlite3_vfs_find(0);
    if (!below) return SQLITE_ERROR;
    if (below->iVersion < 3) return SQLITE_ERROR;
    wbReal = below;
    memset(&wbMethods, 0, sizeof(wbMethods));
    wbMethods.iVersion = 3;
    wbMethods.xClose = wbClose;
    wbMethods.xRead = wbRead;
    wbMethods.xWrite = wbWrite;
    wbMethods.xTruncate = wbTruncate;
    wbMethods.xSync = wbSync;
    wbMethods.xFileSize = wbFileSize;
    wbMethods.xLock = wbLock;
    wbMethods.xUnlock = wbUnlock;
    wbMethods.xCheckReservedLock = wbCheckReservedLock;
    wbMethods.xFileControl = wbFileControl;
    wbMethods.xSectorSize = wbSectorSize;
    wbMethods.xDeviceCharacteristics = wbDeviceCharacteristics;
    wbMethods.xShmMap = wbShmMap;
    wbMethods.xShmLock = wbShmLock;
    wbMethods.xShmBarrier = wbShmBarrier;
    wbMethods.xShmUnmap = wbShmUnmap;
    wbMethods.xFetch = wbFetch;
    wbMethods.xUnfetch = wbUnfetch;
    memset(&wbVfs, 0, sizeof(wbVfs));
    wbVfs.iVersion = 3;
    wbVfs.szOsFile = (int)sizeof(WbFile) + below->szOsFile;
    wbVfs.mxPathname = below->mxPathname;
    wbVfs.zName = WB_NAME;
    wbVfs.xOpen = wbOpen;
    wbVfs.xDelete = wbDelete;
    wbVfs.xAccess = wbAccess;
    wbVfs.xFullPathname = wbFullPathname;
    wbVfs.xDlOpen = wbDlOpen;
    wbVfs.xDlError = wbDlError;
    wbVfs.xDlSym = wbDlSym;
    wbVfs.xDlClose = wbDlClose;
    wbVfs.xRandomness = wbRandomness;
    wbVfs.xSleep = wbSleep;
    wbVfs.xCurrentTime = wbCurrentTime;
    wbVfs.xGetLastError = wbGetLastError;
    wbVfs.xCurrentTimeInt64 = wbCurrentTimeInt64;
    wbVfs.xSetSystemCall = wbSetSystemCall;
    wbVfs.xGetSystemCall = wbGetSystemCall;
    wbVfs.xNextSystemCall = wbNextSystemCall;
    int rc = sqlite3_vfs_register(&wbVfs, 1);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_auto_extension((void (*)(void))addStatsFunction);
    if (rc != SQLITE_OK) return rc;
  }
  int rc = addStatsFunction(db, err, api);
  if (rc != SQLITE_OK) return rc;
  return SQLITE_OK_LOAD_PERMANENTLY;
}
