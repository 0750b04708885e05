/*
 * wal-sync: makes a commit's WAL frames durable without writing the WAL's inode when the inode
 * holds nothing that recovery needs (issue 10).
 *
 * Why. SQLite overwrites its WAL in place: after each checkpoint that copied every frame, the next
 * writer starts again at the file's beginning, so most commits rewrite blocks the file already has.
 * Each write moves the file's mtime, which dirties the inode, and on ext4 without a journal (these
 * machines) `fdatasync` then writes the inode's block and waits for it, between the data's wait
 * and the disk's cache flush: three waits where two would do. Measured with a loop of 16 KiB
 * overwrites 5 ms apart: 2.96 voluntary context switches and 145-186 us of CPU per `fdatasync`,
 * 0.26-0.32 ms; with this library's light sync 2.00, 101-111 us and 0.19 ms. (Two writes within
 * one clock tick leave the mtime where it was, and then both cost the same.) An mtime is not
 * needed to recover a WAL: its frames carry their own checksums and salts.
 *
 * The light sync: `sync_file_range` with WAIT_BEFORE | WRITE | WAIT_AFTER writes the file's dirty
 * pages and waits until the disk has them, then `fdatasync` of a small file that is never written
 * (`flushFd`), which on ext4 writes nothing and issues the disk's cache flush (`blkdev_issue_flush`;
 * with a journal too, for a file whose last transaction was long committed). That is what
 * `fdatasync` of the WAL does, less the inode, and it is durable only where the inode holds nothing
 * new that recovery needs, that is where each frame written since the last full sync lies in
 * blocks the file had, allocated and written, at that sync:
 * - the file is no larger than at the last full sync (a larger one has new blocks and a new size);
 * - the WAL header (bytes 12-31: the checkpoint sequence, the salts, its checksum) is the one seen
 *   at the last full sync. SQLite rewrites the header whenever it restarts the WAL, and only then
 *   truncates it (`journal_size_limit`, `wal_checkpoint(TRUNCATE)`): a truncated file regrown to
 *   its old size has new blocks, and always a new header. A file shorter than its header (just
 *   truncated) is a full sync too.
 * - the filesystem overwrites in place and journals no data: ext2/3/4 (checked by the caller:
 *   `statfs`, and no `data=journal` among the mount's options), and not a file with its own data
 *   journalling flag (`chattr +j`, checked here). A copy-on-write filesystem (btrfs, ZFS) writes an
 *   overwrite elsewhere, and a journalled one keeps the data in the journal: `fdatasync` there.
 * Otherwise the sync is an `fdatasync` of the WAL, and its header and size become the reference.
 * They are read before it, so frames appended meanwhile (a commit during a sync on the thread
 * pool) are covered by the next full one.
 *
 * JavaScript calls: `open(walFd, flushFd)` returns a handle (it keeps the descriptors' numbers; the
 * caller closes them, after the handle's last use); `lightAllowed(handle)` is false when the file
 * journals its data; `sync(handle)` syncs on the calling thread and returns true for a light sync;
 * `syncAsync(handle, callback)` does the same on libuv's thread pool and calls back
 * `(error, light)`; `writeback(handle)` starts writing the WAL's dirty pages back and returns at
 * once (`sync_file_range` with WRITE alone), so that the disk works on them while the caller does
 * what it has to before its sync, whose wait for them is then shorter or none (issued right after
 * a commit that a sync will follow); an error carries the errno's name as `code` (`EIO`, ...); `counts(handle)`
 * returns `[light, full]`. One sync at a time per handle (the store runs one at a time).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* The part of SQLite's 32-byte WAL header that changes when the WAL restarts: checkpoint sequence
 * (12), salt-1 (16), salt-2 (20), checksum (24, 28). */
#define HEADER_FROM 12
#define HEADER_TO 32

typedef struct wal_sync {
  int wal_fd;
  int flush_fd;
  int light_allowed;
  /* The header and size seen before the last full sync; size -1: no full sync yet. */
  unsigned char header[HEADER_TO - HEADER_FROM];
  off_t size;
  uint64_t light;
  uint64_t full;
} wal_sync;

/* One sync; returns 0 or an errno, and sets *light. */
static int do_sync(wal_sync* s, int* light) {
  unsigned char head[HEADER_TO];
  struct stat st;
  if (fstat(s->wal_fd, &st) != 0) return errno;
  ssize_t n = pread(s->wal_fd, head, HEADER_TO, 0);
  if (n < 0) return errno;
  int whole = n == HEADER_TO;
  *light = s->light_allowed && whole && s->size >= HEADER_TO && st.st_size <= s->size &&
           memcmp(head + HEADER_FROM, s->header, sizeof s->header) == 0;
  if (*light) {
    if (sync_file_range(s->wal_fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0) return errno;
    if (fdatasync(s->flush_fd) != 0) return errno;
    s->light++;
    return 0;
  }
  if (fdatasync(s->wal_fd) != 0) return errno;
  if (whole) {
    memcpy(s->header, head + HEADER_FROM, sizeof s->header);
    s->size = st.st_size;
  } else {
    s->size = -1;
  }
  s->full++;
  return 0;
}

static napi_value errno_error(napi_env env, int code) {
  napi_value msg, err, code_value;
  const char* name = strerrorname_np(code);
  char text[160];
  snprintf(text, sizeof text, "%s: %s (sync of the WAL)", name ? name : "E?", strerror(code));
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &msg);
  napi_create_error(env, NULL, msg, &err);
  napi_create_string_utf8(env, name ? name : "EIO", NAPI_AUTO_LENGTH, &code_value);
  napi_set_named_property(env, err, "code", code_value);
  return err;
}

static void finalize(napi_env env, void* data, void* hint) {
  (void)env;
  (void)hint;
  free(data);
}

/* The call's arguments into argv (up to `n`, the missing ones undefined); returns the handle that
 * is the first, or NULL with a TypeError thrown. */
static wal_sync* handle_arg(napi_env env, napi_callback_info info, size_t n, napi_value* argv) {
  size_t argc = n;
  void* data = NULL;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_external(env, argv[0], &data) != napi_ok || data == NULL) {
    napi_throw_type_error(env, NULL, "wal-sync: not a handle");
    return NULL;
  }
  return (wal_sync*)data;
}

static napi_value open_handle(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t wal_fd = -1, flush_fd = -1;
  if (argc < 2 || napi_get_value_int32(env, argv[0], &wal_fd) != napi_ok || napi_get_value_int32(env, argv[1], &flush_fd) != napi_ok || wal_fd < 0 || flush_fd < 0) {
    napi_throw_type_error(env, NULL, "wal-sync: open(walFd, flushFd) takes two descriptors");
    return NULL;
  }
  wal_sync* s = calloc(1, sizeof *s);
  if (!s) {
    napi_throw_error(env, NULL, "wal-sync: out of memory");
    return NULL;
  }
  s->wal_fd = wal_fd;
  s->flush_fd = flush_fd;
  s->size = -1;
  int flags = 0;
  /* A file that journals its own data (chattr +j) keeps the data in the journal: never light. A
   * filesystem that cannot say (ENOTTY) has no such flag. */
  s->light_allowed = !(ioctl(wal_fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & FS_JOURNAL_DATA_FL));
  napi_value external;
  if (napi_create_external(env, s, finalize, NULL, &external) != napi_ok) {
    free(s);
    return NULL;
  }
  return external;
}

/* Starts writing the WAL's dirty pages back now, without waiting (see `writeback` above). Errors are
 * left to the sync that follows, which reports them. */
static napi_value writeback(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  wal_sync* s = handle_arg(env, info, 1, argv);
  if (!s) return NULL;
  sync_file_range(s->wal_fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  return NULL;
}

static napi_value light_allowed(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  wal_sync* s = handle_arg(env, info, 1, argv);
  if (!s) return NULL;
  napi_value result;
  napi_get_boolean(env, s->light_allowed, &result);
  return result;
}

static napi_value sync_now(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  wal_sync* s = handle_arg(env, info, 1, argv);
  if (!s) return NULL;
  int light = 0;
  int code = do_sync(s, &light);
  if (code != 0) {
    napi_throw(env, errno_error(env, code));
    return NULL;
  }
  napi_value result;
  napi_get_boolean(env, light, &result);
  return result;
}

typedef struct sync_work {
  napi_async_work work;
  napi_ref handle;
  napi_ref callback;
  wal_sync* s;
  int code;
  int light;
} sync_work;

static void execute(napi_env env, void* data) {
  (void)env;
  sync_work* w = data;
  w->code = do_sync(w->s, &w->light);
}

static void complete(napi_env env, napi_status status, void* data) {
  sync_work* w = data;
  napi_value callback, global, argv[2];
  napi_get_reference_value(env, w->callback, &callback);
  napi_get_global(env, &global);
  if (status != napi_ok) {
    napi_value msg;
    napi_create_string_utf8(env, "wal-sync: the sync was cancelled", NAPI_AUTO_LENGTH, &msg);
    napi_create_error(env, NULL, msg, &argv[0]);
    napi_get_boolean(env, 0, &argv[1]);
  } else if (w->code != 0) {
    argv[0] = errno_error(env, w->code);
    napi_get_boolean(env, 0, &argv[1]);
  } else {
    napi_get_null(env, &argv[0]);
    napi_get_boolean(env, w->light, &argv[1]);
  }
  napi_delete_reference(env, w->callback);
  napi_delete_reference(env, w->handle);
  napi_delete_async_work(env, w->work);
  free(w);
  /* Called as an I/O callback: a throw goes to uncaughtException, microtasks run after it. */
  napi_call_function(env, global, callback, 2, argv, NULL);
}

static napi_value sync_async(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  wal_sync* s = handle_arg(env, info, 2, argv);
  if (!s) return NULL;
  napi_valuetype type;
  if (napi_typeof(env, argv[1], &type) != napi_ok || type != napi_function) {
    napi_throw_type_error(env, NULL, "wal-sync: syncAsync(handle, callback) takes a callback");
    return NULL;
  }
  sync_work* w = calloc(1, sizeof *w);
  if (!w) {
    napi_throw_error(env, NULL, "wal-sync: out of memory");
    return NULL;
  }
  w->s = s;
  /* The handle stays alive while its sync runs. */
  napi_create_reference(env, argv[0], 1, &w->handle);
  napi_create_reference(env, argv[1], 1, &w->callback);
  napi_value name;
  napi_create_string_utf8(env, "SluiceWalSync", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(env, NULL, name, execute, complete, w, &w->work);
  napi_queue_async_work(env, w->work);
  return NULL;
}

static napi_value counts(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  wal_sync* s = handle_arg(env, info, 1, argv);
  if (!s) return NULL;
  napi_value result, light, full;
  napi_create_array_with_length(env, 2, &result);
  napi_create_double(env, (double)s->light, &light);
  napi_create_double(env, (double)s->full, &full);
  napi_set_element(env, result, 0, light);
  napi_set_element(env, result, 1, full);
  return result;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
    {"open", NULL, open_handle, NULL, NULL, NULL, napi_default, NULL},
    {"lightAllowed", NULL, light_allowed, NULL, NULL, NULL, napi_default, NULL},
    {"sync", NULL, sync_now, NULL, NULL, NULL, napi_default, NULL},
    {"writeback", NULL, writeback, NULL, NULL, NULL, napi_default, NULL},
    {"syncAsync", NULL, sync_async, NULL, NULL, NULL, napi_default, NULL},
    {"counts", NULL, counts, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
