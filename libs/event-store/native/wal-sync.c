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
 * Started early, on io_uring. Where the kernel allows it, a light sync can be started and waited
 * for later: `start` checks the rule above and queues the two steps on an io_uring of the handle's
 * own as linked operations (`IORING_OP_SYNC_FILE_RANGE`, then `IORING_OP_FSYNC` with DATASYNC of
 * the flush file, which runs only once the first succeeded), which the kernel's io_uring workers
 * run while the caller goes on; `finish` waits for both completions (often there already: no
 * wait) and reports the first failure. The store starts a sync on the event loop right after the
 * commit it covers and waits for it where it used to sync, one turn later, so the disk's cache
 * flush overlaps what the loop does meanwhile (a run's invocation written, its result read). A
 * full sync is started the same way, as `IORING_OP_FSYNC` of the WAL (the header and size read
 * at the start become the reference once it succeeded). Nothing is started where io_uring is
 * unavailable (ENOSYS, EPERM under a container's seccomp filter, `kernel.io_uring_disabled`):
 * `ringUnavailable` says why, and the caller syncs with `sync` as before.
 *
 * JavaScript calls: `open(walFd, flushFd, ring)` returns a handle (it keeps the descriptors' numbers; the
 * caller closes them, after the handle's last use; `ring` true sets up the io_uring now);
 * `start(handle)` and `finish(handle)` as above (`start` false: nothing started; `finish` says
 * whether the sync was light, or throws); `ringUnavailable(handle)` null or why (`not asked for`, an errno's name);
 * `lightAllowed(handle)` is false when the file
 * journals its data; `sync(handle)` syncs on the calling thread and returns true for a light sync;
 * `syncAsync(handle, callback)` does the same on libuv's thread pool and calls back
 * `(error, light)`; `writeback(handle)` starts writing the WAL's dirty pages back and returns at
 * once (`sync_file_range` with WRITE alone), so that the disk works on them while the caller does
 * what it has to before its sync, whose wait for them is then shorter or none (issued right after
 * a commit that a sync will follow); an error carries the errno's name as `code` (`EIO`, ...); `counts(handle)`
 * returns `[light, full, started]` (started: those of either kind started on io_uring). One sync at a
 * time per handle, started or not (the store runs one at a time).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/fs.h>
#if defined(__has_include)
#if __has_include(<linux/io_uring.h>)
#include <linux/io_uring.h>
#define WAL_SYNC_RING 1
#endif
#endif
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The part of SQLite's 32-byte WAL header that changes when the WAL restarts: checkpoint sequence
 * (12), salt-1 (16), salt-2 (20), checksum (24, 28). */
#define HEADER_FROM 12
#define HEADER_TO 32

/* An io_uring of our own (raw system calls; no liburing): two submission entries, read by the
 * calling thread only. */
typedef struct ring {
  int fd;
#ifdef WAL_SYNC_RING
  unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
  struct io_uring_sqe* sqes;
  struct io_uring_cqe* cqes;
  void* sq_map;
  size_t sq_len;
  void* cq_map;
  size_t cq_len;
  size_t sqes_len;
#endif
} ring;

typedef struct wal_sync {
  int wal_fd;
  int flush_fd;
  int light_allowed;
  /* The header and size seen before the last full sync; size -1: no full sync yet. */
  unsigned char header[HEADER_TO - HEADER_FROM];
  off_t size;
  uint64_t light;
  uint64_t full;
  /* The ring for light syncs started at once and waited for later (`start`, `finish`): 1 ready,
   * -1 unavailable (ring_errno says why: 0 not asked for, ENOSYS, EPERM under a seccomp filter,
   * EINVAL for an operation the kernel does not have, ...). */
  int ring_state;
  int ring_errno;
  ring r;
  /* Completions still owed to the sync started (0: none started), whether it is light, and for
   * a full one the header and size read before it (the reference once it succeeded). */
  int in_flight;
  int pending_light;
  unsigned char pending_header[HEADER_TO - HEADER_FROM];
  off_t pending_size;
  uint64_t started;
} wal_sync;

/* Whether the next sync may be light (see the header); reads the WAL's header into head. */
static int light_now(wal_sync* s, unsigned char* head, struct stat* st, int* whole, int* code) {
  *code = 0;
  if (fstat(s->wal_fd, st) != 0) {
    *code = errno;
    return 0;
  }
  ssize_t n = pread(s->wal_fd, head, HEADER_TO, 0);
  if (n < 0) {
    *code = errno;
    return 0;
  }
  *whole = n == HEADER_TO;
  return s->light_allowed && *whole && s->size >= HEADER_TO && st->st_size <= s->size &&
         memcmp(head + HEADER_FROM, s->header, sizeof s->header) == 0;
}

/* One sync; returns 0 or an errno, and sets *light. */
static int do_sync(wal_sync* s, int* light) {
  unsigned char head[HEADER_TO];
  struct stat st;
  int whole = 0, code = 0;
  *light = light_now(s, head, &st, &whole, &code);
  if (code != 0) return code;
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


#ifdef WAL_SYNC_RING
static void ring_unmap(ring* r) {
  if (r->sqes && r->sqes != MAP_FAILED) munmap(r->sqes, r->sqes_len);
  if (r->cq_map && r->cq_map != MAP_FAILED && r->cq_map != r->sq_map) munmap(r->cq_map, r->cq_len);
  if (r->sq_map && r->sq_map != MAP_FAILED) munmap(r->sq_map, r->sq_len);
  if (r->fd >= 0) close(r->fd);
  memset(r, 0, sizeof *r);
  r->fd = -1;
}

/* Sets up the ring; returns 0 or an errno. Its descriptor is close-on-exec (io_uring_setup's own). */
static int ring_setup(ring* r) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  memset(r, 0, sizeof *r);
  r->fd = (int)syscall(__NR_io_uring_setup, 2, &p);
  if (r->fd < 0) {
    r->fd = -1;
    return errno;
  }
  r->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  r->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
  int single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
  if (single && r->cq_len > r->sq_len) r->sq_len = r->cq_len;
  r->sq_map = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
  if (r->sq_map == MAP_FAILED) goto fail;
  r->cq_map = single ? r->sq_map : mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
  if (r->cq_map == MAP_FAILED) goto fail;
  r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
  r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
  if (r->sqes == MAP_FAILED) goto fail;
  char* sq = r->sq_map;
  char* cq = r->cq_map;
  r->sq_tail = (unsigned*)(sq + p.sq_off.tail);
  r->sq_mask = (unsigned*)(sq + p.sq_off.ring_mask);
  r->sq_array = (unsigned*)(sq + p.sq_off.array);
  r->cq_head = (unsigned*)(cq + p.cq_off.head);
  r->cq_tail = (unsigned*)(cq + p.cq_off.tail);
  r->cq_mask = (unsigned*)(cq + p.cq_off.ring_mask);
  r->cqes = (struct io_uring_cqe*)(cq + p.cq_off.cqes);
  return 0;
fail:;
  int code = errno;
  ring_unmap(r);
  return code;
}

/* Queues a sync, run by the kernel's io_uring workers: a light one as two linked operations, the
 * WAL's pages written and waited for (`sync_file_range`), then, only once that succeeded,
 * `fdatasync` of the flush file (the disk's cache flush); a full one as `fdatasync` of the WAL.
 * Returns how many operations the kernel took (of 2, or of 1), or -errno. */
static int ring_submit(wal_sync* s, int light) {
  ring* r = &s->r;
  unsigned tail = *r->sq_tail;
  unsigned count = light ? 2 : 1;
  for (unsigned i = 0; i < count; i++) {
    unsigned index = (tail + i) & *r->sq_mask;
    struct io_uring_sqe* e = &r->sqes[index];
    memset(e, 0, sizeof *e);
    if (!light) {
      e->opcode = IORING_OP_FSYNC;
      e->fd = s->wal_fd;
      e->fsync_flags = IORING_FSYNC_DATASYNC;
    } else if (i == 0) {
      e->opcode = IORING_OP_SYNC_FILE_RANGE;
      e->fd = s->wal_fd;
      e->sync_range_flags = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
      e->flags = IOSQE_IO_LINK;
    } else {
      e->opcode = IORING_OP_FSYNC;
      e->fd = s->flush_fd;
      e->fsync_flags = IORING_FSYNC_DATASYNC;
    }
    e->user_data = i + 1;
    r->sq_array[index] = index;
  }
  __atomic_store_n(r->sq_tail, tail + count, __ATOMIC_RELEASE);
  for (;;) {
    int n = (int)syscall(__NR_io_uring_enter, r->fd, count, 0, 0, NULL, 0);
    if (n >= 0) return n;
    if (errno != EINTR) return -errno;
  }
}

/* Waits for the `in_flight` completions of the sync started; returns 0, or the errno of the first
 * operation that failed (the flush is cancelled, ECANCELED, when the pages' write failed). */
static int ring_reap(wal_sync* s) {
  ring* r = &s->r;
  int results[3] = {0, 0, 0};
  while (s->in_flight > 0) {
    unsigned head = *r->cq_head;
    unsigned tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
    while (head != tail && s->in_flight > 0) {
      struct io_uring_cqe* c = &r->cqes[head & *r->cq_mask];
      if (c->user_data >= 1 && c->user_data <= 2) results[c->user_data] = c->res;
      head++;
      s->in_flight--;
    }
    __atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
    if (s->in_flight == 0) break;
    if (syscall(__NR_io_uring_enter, r->fd, 0, (unsigned)s->in_flight, IORING_ENTER_GETEVENTS, NULL, 0) < 0 && errno != EINTR) {
      /* The ring cannot be waited on: nothing more can be known of this sync. */
      int code = errno;
      s->in_flight = 0;
      s->ring_state = -1;
      s->ring_errno = code;
      return code;
    }
  }
  /* A link that fails as it is queued (a bad descriptor) cancels the operations linked to it:
   * the error to report is the one that is not ECANCELED. */
  for (int i = 1; i <= 2; i++)
    if (results[i] < 0 && results[i] != -ECANCELED) return -results[i];
  for (int i = 1; i <= 2; i++)
    if (results[i] < 0) return -results[i];
  return 0;
}

#else
/* Built without <linux/io_uring.h>: no ring, every sync on the calling thread. */
static void ring_unmap(ring* r) { r->fd = -1; }
static int ring_setup(ring* r) {
  r->fd = -1;
  return ENOSYS;
}
static int ring_submit(wal_sync* s, int light) {
  (void)s;
  (void)light;
  return -ENOSYS;
}
static int ring_reap(wal_sync* s) {
  s->in_flight = 0;
  return ENOSYS;
}
#endif

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

/* A sync's answer to JavaScript: whether it was light, or the errno's error thrown. */
static napi_value light_or_throw(napi_env env, int code, int light) {
  if (code != 0) {
    napi_throw(env, errno_error(env, code));
    return NULL;
  }
  napi_value result;
  napi_get_boolean(env, light, &result);
  return result;
}

static void finalize(napi_env env, void* data, void* hint) {
  (void)env;
  (void)hint;
  wal_sync* s = data;
  /* Set up once, whatever its state since (a ring found unusable later stays mapped until here). */
  if (s->r.fd >= 0) ring_unmap(&s->r);
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
  size_t argc = 3;
  napi_value argv[3];
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
  s->r.fd = -1;
  int flags = 0;
  /* A file that journals its own data (chattr +j) keeps the data in the journal: never light. A
   * filesystem that cannot say (ENOTTY) has no such flag. */
  s->light_allowed = !(ioctl(wal_fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & FS_JOURNAL_DATA_FL));
  /* The ring, when asked for (a third argument true), is set up now, with the store's other
   * descriptors; otherwise `start` never starts anything. */
  bool ring = false;
  if (argc < 3 || napi_get_value_bool(env, argv[2], &ring) != napi_ok) ring = false;
  if (ring && s->light_allowed) {
    int setup = ring_setup(&s->r);
    s->ring_state = setup == 0 ? 1 : -1;
    s->ring_errno = setup;
  } else {
    s->ring_state = -1;
    s->ring_errno = 0;
  }
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
  return light_or_throw(env, code, light);
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


/* Starts the next sync (light or full, by the rule above) through the ring and returns true, or
 * returns false and starts nothing: the ring is unavailable, the kernel refused the operations,
 * or the WAL could not be looked at (the caller's `sync` then reports why). What it covers is
 * what was written before the call. */
static napi_value start_sync(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  wal_sync* s = handle_arg(env, info, 1, argv);
  if (!s) return NULL;
  napi_value result;
  if (s->in_flight > 0) {
    napi_throw_error(env, NULL, "wal-sync: start while a started sync is not finished");
    return NULL;
  }
  int started = 0;
  if (s->ring_state == 1) {
    unsigned char head[HEADER_TO];
    struct stat st;
    int whole = 0, code = 0;
    int light = light_now(s, head, &st, &whole, &code);
    if (code == 0) {
      int n = ring_submit(s, light);
      if (n < 0) {
        s->ring_state = -1;
        s->ring_errno = -n;
      } else {
        /* Taken in part (one of two): wait for what was taken, and the caller syncs. */
        s->in_flight = n;
        started = n == (light ? 2 : 1);
        if (!started && n > 0) {
          ring_reap(s);
          s->ring_state = -1;
          s->ring_errno = EAGAIN;
        }
      }
      if (started) {
        s->pending_light = light;
        if (!light) {
          memcpy(s->pending_header, head + HEADER_FROM, sizeof s->pending_header);
          s->pending_size = whole ? st.st_size : -1;
        }
      }
    }
  }
  if (started) s->started++;
  napi_get_boolean(env, started, &result);
  return result;
}

/* Waits for the sync `start` started; returns whether it was light, or throws the errno of the
 * operation that failed. An operation this kernel does not have (EINVAL, EOPNOTSUPP) makes the
 * ring unavailable and the sync is done here instead, on the calling thread. */
static napi_value finish_sync(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  wal_sync* s = handle_arg(env, info, 1, argv);
  if (!s) return NULL;
  if (s->in_flight == 0) {
    napi_throw_error(env, NULL, "wal-sync: finish without a started sync");
    return NULL;
  }
  int code = ring_reap(s);
  int light = s->pending_light;
  if (code == EINVAL || code == EOPNOTSUPP) {
    s->ring_state = -1;
    s->ring_errno = code;
    code = do_sync(s, &light);
  } else if (code == 0 && light) {
    s->light++;
  } else if (code == 0) {
    /* As do_sync's full sync: what was read before it is the reference now. */
    memcpy(s->header, s->pending_header, sizeof s->header);
    s->size = s->pending_size;
    s->full++;
  }
  return light_or_throw(env, code, light);
}

/* Why the ring is unavailable (the errno's name), or null while it is or may be. */
static napi_value ring_unavailable(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  wal_sync* s = handle_arg(env, info, 1, argv);
  if (!s) return NULL;
  napi_value result;
  if (s->ring_state == 1) {
    napi_get_null(env, &result);
  } else if (s->ring_errno == 0) {
    napi_create_string_utf8(env, "not asked for", NAPI_AUTO_LENGTH, &result);
  } else {
    const char* name = strerrorname_np(s->ring_errno);
    napi_create_string_utf8(env, name ? name : "E?", NAPI_AUTO_LENGTH, &result);
  }
  return result;
}

static napi_value counts(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  wal_sync* s = handle_arg(env, info, 1, argv);
  if (!s) return NULL;
  napi_value result, light, full, started;
  napi_create_array_with_length(env, 3, &result);
  napi_create_double(env, (double)s->light, &light);
  napi_create_double(env, (double)s->full, &full);
  napi_create_double(env, (double)s->started, &started);
  napi_set_element(env, result, 0, light);
  napi_set_element(env, result, 1, full);
  napi_set_element(env, result, 2, started);
  return result;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
    {"open", NULL, open_handle, NULL, NULL, NULL, napi_default, NULL},
    {"lightAllowed", NULL, light_allowed, NULL, NULL, NULL, napi_default, NULL},
    {"sync", NULL, sync_now, NULL, NULL, NULL, napi_default, NULL},
    {"writeback", NULL, writeback, NULL, NULL, NULL, napi_default, NULL},
    {"syncAsync", NULL, sync_async, NULL, NULL, NULL, napi_default, NULL},
    {"start", NULL, start_sync, NULL, NULL, NULL, napi_default, NULL},
    {"finish", NULL, finish_sync, NULL, NULL, NULL, napi_default, NULL},
    {"ringUnavailable", NULL, ring_unavailable, NULL, NULL, NULL, napi_default, NULL},
    {"counts", NULL, counts, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
