/*
 * sync-watchdog: a thread of a sandbox worker that watches the synchronous entries of its main
 * thread into isolates (`ComponentIsolate.invokeSync`) and ends the process when one has held that
 * thread too long, after writing the fatal line that names the instance (prepared by JavaScript).
 *
 * Why a native thread: an entry can hold the main thread where nothing in it can run again.
 * isolated-vm reports a catastrophic error (V8's out-of-memory of `Array(1e9).fill(0)`) through
 * a callback that must run on the thread of the isolate that asked for the entry, which is the
 * one stuck in it: the worker would hang until the supervisor's heartbeat kill, blaming nobody.
 * A JavaScript timer cannot fire there, and a `worker_threads` thread would cost megabytes of RSS
 * for a few bytes of state. This thread costs no wake-up while no entries are made (it sleeps on a
 * condition variable), and one per `PERIOD` while they are.
 *
 * JavaScript calls: `start(limitMs)` once, `enter(line)` before each entry (`line` is a string,
 * the fatal line for the entry's instance, or undefined to keep the last one), `leave()` after it.
 */
#include <node_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINE 4096

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static int started = 0;
/* Set while the thread polls; the main thread wakes it (under mu) when it finds it clear. */
static atomic_int awake = 0;
/* CLOCK_MONOTONIC ns at which the entry in progress began; 0 outside entries. */
static atomic_llong entered_ns = 0;
/* Entries begun so far: the thread goes back to sleep after a period without any. */
static atomic_ulong entries = 0;
static long long limit_ns = 0;
static long long period_ns = 0;
static char line[MAX_LINE];
static size_t line_len = 0;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void die(void) {
  size_t off = 0;
  while (off < line_len) {
    ssize_t n = write(2, line + off, line_len - off);
    if (n <= 0) break;
    off += (size_t)n;
  }
  kill(getpid(), SIGKILL);
}

static void *watch(void *arg) {
  (void)arg;
  unsigned long seen = atomic_load(&entries);
  pthread_mutex_lock(&mu);
  for (;;) {
    while (!atomic_load(&awake)) pthread_cond_wait(&cv, &mu);
    long long wake = now_ns() + period_ns;
    struct timespec until = { (time_t)(wake / 1000000000LL), (long)(wake % 1000000000LL) };
    pthread_cond_timedwait(&cv, &mu, &until);
    long long at = atomic_load(&entered_ns);
    if (at != 0 && now_ns() - at > limit_ns) die();
    unsigned long n = atomic_load(&entries);
    if (n == seen && at == 0) {
      /* A quiet period: sleep until the next entry. The store comes before the second look at
       * `entries`, and `enter` counts before it looks at `awake`, so one of the two sees the other. */
      atomic_store(&awake, 0);
      if (atomic_load(&entries) != seen) atomic_store(&awake, 1);
    }
    seen = atomic_load(&entries);
  }
  return NULL;
}

static napi_value start(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  double ms = 0;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_double(env, argv[0], &ms) != napi_ok || ms < 1) {
    napi_throw_type_error(env, NULL, "start(limitMs): limitMs must be a number >= 1");
    return NULL;
  }
  pthread_mutex_lock(&mu);
  limit_ns = (long long)(ms * 1e6);
  period_ns = limit_ns / 4 > 1000000LL ? limit_ns / 4 : 1000000LL;
  if (!started) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &attr);
    pthread_attr_t tattr;
    pthread_attr_init(&tattr);
    pthread_attr_setstacksize(&tattr, 64 * 1024);
    pthread_attr_setdetachstate(&tattr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    if (pthread_create(&thread, &tattr, watch, NULL) != 0) {
      pthread_mutex_unlock(&mu);
      napi_throw_error(env, NULL, "could not start the watchdog thread");
      return NULL;
    }
    started = 1;
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

static napi_value enter(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc >= 1) {
    napi_valuetype type;
    napi_typeof(env, argv[0], &type);
    if (type == napi_string) {
      char buffer[MAX_LINE];
      size_t len = 0;
      napi_get_value_string_utf8(env, argv[0], buffer, sizeof buffer, &len);
      pthread_mutex_lock(&mu);
      memcpy(line, buffer, len);
      line_len = len;
      pthread_mutex_unlock(&mu);
    }
  }
  atomic_store(&entered_ns, now_ns());
  atomic_fetch_add(&entries, 1);
  if (!atomic_load(&awake)) {
    pthread_mutex_lock(&mu);
    atomic_store(&awake, 1);
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

static napi_value leave(napi_env env, napi_callback_info info) {
  (void)env;
  (void)info;
  atomic_store(&entered_ns, 0);
  return NULL;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
    { "start", NULL, start, NULL, NULL, NULL, napi_default, NULL },
    { "enter", NULL, enter, NULL, NULL, NULL, napi_default, NULL },
    { "leave", NULL, leave, NULL, NULL, NULL, napi_default, NULL },
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
