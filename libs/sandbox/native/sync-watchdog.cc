/*
 * sync-watchdog: a thread of a sandbox worker that watches the synchronous entries of its main
 * thread into isolates (`ComponentIsolate.invokeSync`). An entry still running after its budget
 * (20 ms) is stopped here, the way isolated-vm's own `timeout` would stop it; one that holds the
 * thread past the stuck limit (5 s) ends the process, after writing the fatal line that names the
 * instance (prepared by JavaScript).
 *
 * Why not isolated-vm's `timeout`: each entry given one queues a timer on isolated-vm's timer
 * thread, which stays queued until its deadline even once the entry has ended, so every run
 * woke that thread 20 ms later, and when no timer was queued (a run every 100 ms) a new thread
 * was started for it and ended again (issue 10). Here an entry arms a POSIX timer aimed at this
 * thread (`SIGEV_THREAD_ID`) and disarms it when it leaves: two system calls on the main thread
 * and no wake-up of any thread, unless the entry is still running at its budget.
 *
 * Why a native thread: an entry can hold the main thread where nothing in it can run again.
 * isolated-vm reports a catastrophic error (V8's out-of-memory of `Array(1e9).fill(0)`) through
 * a callback that must run on the thread of the isolate that asked for the entry, which is the
 * one stuck in it: the worker would hang until the supervisor's heartbeat kill, blaming nobody.
 * A JavaScript timer cannot fire there, and a `worker_threads` thread would cost megabytes of RSS
 * for a few bytes of state.
 *
 * The guest isolate to stop is learnt by loading this same library into it as an isolated-vm
 * `NativeModule`: isolated-vm calls `InitForContext` with the isolate, and `claim()` hands it to
 * JavaScript as an external, passed back to each `enter`. `TerminateExecution` is one of the V8
 * calls made to be called from any thread; it is called only between `enter` and `leave`, under
 * the lock `leave` takes, so never on an isolate that was disposed meanwhile.
 *
 * JavaScript calls: `start(budgetMs, limitMs)` once; `claim()` right after the module was created
 * in an isolate; `enter(isolate, line)` before each entry (`line` is a string, the fatal line for
 * the entry's instance, or undefined to keep the last one); `leave()` after it, which returns
 * true when this thread stopped the entry at its budget.
 */
#include <node_api.h>
#include <v8.h>

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace {

constexpr size_t MAX_LINE = 4096;
/** After stopping an entry, how often to ask again while it has not left (V8 may miss one request). */
constexpr long long RETRY_NS = 10'000'000LL;

pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* Waited on with CLOCK_MONOTONIC deadlines (set in `start`, before the thread exists). */
pthread_cond_t cv;
int state = 0; /* 0 not started, 1 running, -1 failed to start */
int signo = 0;
timer_t timer;
long long budget_ns = 0;
long long limit_ns = 0;

/* The entry in progress, under mu. */
long long entered_ns = 0;
unsigned long entry_seq = 0;
v8::Isolate* entered_isolate = nullptr;
unsigned long stopped_seq = 0;
char line[MAX_LINE];
size_t line_len = 0;

/* The isolate the module was last created in, until `claim` takes it. */
std::atomic<v8::Isolate*> inited{nullptr};

long long now_ns() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

struct timespec at(long long ns) {
  struct timespec t;
  t.tv_sec = (time_t)(ns / 1000000000LL);
  t.tv_nsec = (long)(ns % 1000000000LL);
  return t;
}

void die() {
  size_t off = 0;
  while (off < line_len) {
    ssize_t n = write(2, line + off, line_len - off);
    if (n <= 0) break;
    off += (size_t)n;
  }
  kill(getpid(), SIGKILL);
}

/* With mu held: the entry in progress has passed its budget. Stops it, then stays with it until it
 * leaves, asking again every RETRY_NS, and ends the process if it is still there at the limit. */
void stop_and_watch() {
  unsigned long seq = entry_seq;
  for (;;) {
    if (entered_ns == 0 || entry_seq != seq) return;
    long long now = now_ns();
    if (now - entered_ns >= limit_ns) die();
    if (entered_isolate != nullptr) {
      entered_isolate->TerminateExecution();
      stopped_seq = seq;
    }
    long long next = now + RETRY_NS;
    if (entered_ns + limit_ns < next) next = entered_ns + limit_ns;
    struct timespec until = at(next);
    pthread_cond_timedwait(&cv, &mu, &until);
  }
}

struct Startup {
  sigset_t set;
  bool ok;
  bool done;
};

void* watch(void* arg) {
  Startup* startup = static_cast<Startup*>(arg);
  /* Named, so that /proc/<pid>/task/<tid>/comm tells it from V8's and libuv's threads. */
  pthread_setname_np(pthread_self(), "sync-watchdog");
  sigset_t set = startup->set;
  struct sigevent sev;
  std::memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = signo;
  sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  pthread_mutex_lock(&mu);
  startup->ok = timer_create(CLOCK_MONOTONIC, &sev, &timer) == 0;
  startup->done = true;
  bool ok = startup->ok;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  if (!ok) return nullptr;
  for (;;) {
    siginfo_t info;
    if (sigwaitinfo(&set, &info) != signo) continue;
    pthread_mutex_lock(&mu);
    /* A signal from an earlier entry's timer can arrive after a new entry began: only an entry
     * that has really run its budget is stopped (the timer is armed for the budget to the ns). */
    if (entered_ns != 0 && now_ns() - entered_ns >= budget_ns) stop_and_watch();
    pthread_mutex_unlock(&mu);
  }
  return nullptr;
}

void arm(long long ns) {
  struct itimerspec spec;
  std::memset(&spec, 0, sizeof spec);
  spec.it_value = at(ns);
  timer_settime(timer, 0, &spec, nullptr);
}

napi_value start(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  double budget = 0, limit = 0;
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc < 2 || napi_get_value_double(env, argv[0], &budget) != napi_ok || napi_get_value_double(env, argv[1], &limit) != napi_ok
      || budget < 1 || limit < budget) {
    napi_throw_type_error(env, nullptr, "start(budgetMs, limitMs): numbers with 1 <= budgetMs <= limitMs");
    return nullptr;
  }
  pthread_mutex_lock(&mu);
  budget_ns = (long long)(budget * 1e6);
  limit_ns = (long long)(limit * 1e6);
  if (state == 0) {
    pthread_condattr_t cattr;
    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &cattr);
    pthread_condattr_destroy(&cattr);
    signo = SIGRTMAX - 3;
    Startup startup;
    sigemptyset(&startup.set);
    sigaddset(&startup.set, signo);
    startup.ok = false;
    startup.done = false;
    /* The thread starts with the signal blocked (it takes it with sigwaitinfo): block it here
     * around pthread_create, which copies this thread's mask, then restore ours. */
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &startup.set, &old);
    pthread_attr_t tattr;
    pthread_attr_init(&tattr);
    pthread_attr_setstacksize(&tattr, 64 * 1024);
    pthread_attr_setdetachstate(&tattr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int created = pthread_create(&thread, &tattr, watch, &startup);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (created == 0) {
      while (!startup.done) pthread_cond_wait(&cv, &mu);
    }
    state = created == 0 && startup.ok ? 1 : -1;
  }
  int now = state;
  pthread_mutex_unlock(&mu);
  if (now != 1) napi_throw_error(env, nullptr, "could not start the watchdog thread and its timer");
  return nullptr;
}

napi_value claim(napi_env env, napi_callback_info info) {
  (void)info;
  v8::Isolate* isolate = inited.exchange(nullptr);
  if (isolate == nullptr) {
    napi_throw_error(env, nullptr, "claim(): the module was not created in an isolate since the last claim");
    return nullptr;
  }
  napi_value out;
  napi_create_external(env, isolate, nullptr, nullptr, &out);
  return out;
}

napi_value enter(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  void* isolate = nullptr;
  napi_valuetype type;
  if (argc < 1 || napi_typeof(env, argv[0], &type) != napi_ok || type != napi_external
      || napi_get_value_external(env, argv[0], &isolate) != napi_ok) {
    napi_throw_type_error(env, nullptr, "enter(isolate, line): isolate must be what claim() returned");
    return nullptr;
  }
  char buffer[MAX_LINE];
  size_t len = 0;
  bool has_line = argc >= 2 && napi_typeof(env, argv[1], &type) == napi_ok && type == napi_string
      && napi_get_value_string_utf8(env, argv[1], buffer, sizeof buffer, &len) == napi_ok;
  pthread_mutex_lock(&mu);
  if (has_line) {
    std::memcpy(line, buffer, len);
    line_len = len;
  }
  entered_isolate = static_cast<v8::Isolate*>(isolate);
  entry_seq++;
  entered_ns = now_ns();
  pthread_mutex_unlock(&mu);
  arm(budget_ns);
  return nullptr;
}

napi_value leave(napi_env env, napi_callback_info info) {
  (void)info;
  arm(0);
  pthread_mutex_lock(&mu);
  bool stopped = stopped_seq == entry_seq && entered_ns != 0;
  entered_ns = 0;
  entered_isolate = nullptr;
  pthread_mutex_unlock(&mu);
  napi_value out;
  napi_get_boolean(env, stopped, &out);
  return out;
}

}  // namespace

/* isolated-vm's `NativeModule.createSync(context)` calls this inside the isolate being made. */
extern "C" __attribute__((visibility("default"))) void InitForContext(v8::Isolate* isolate, v8::Local<v8::Context> context, v8::Local<v8::Object> target) {
  (void)context;
  (void)target;
  inited.store(isolate);
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
    { "start", nullptr, start, nullptr, nullptr, nullptr, napi_default, nullptr },
    { "claim", nullptr, claim, nullptr, nullptr, nullptr, napi_default, nullptr },
    { "enter", nullptr, enter, nullptr, nullptr, nullptr, napi_default, nullptr },
    { "leave", nullptr, leave, nullptr, nullptr, nullptr, napi_default, nullptr },
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
