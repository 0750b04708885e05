/*
 * loop-timer: a timer of the event loop's own (a libuv `uv_timer_t`) that stopping really stops.
 *
 * Node keeps all of its JavaScript timers on one libuv timer, armed for the earliest of them, and
 * `clearTimeout` does not re-arm it: a timer cleared before its time still wakes the loop at that
 * time, to find nothing to run (a "ghost" wake-up). The event store's linger timer is armed for
 * each lingering append and is almost always cleared early, when the next commit takes the append
 * along: at 10 events a second that was two wake-ups of the server's main thread per event (the
 * request's 2 ms linger, the delivery outcome's 100 ms), each about 100 us of CPU on the machines
 * measured (issue 10). `uv_timer_stop` takes this timer out of libuv's heap, so nothing wakes.
 *
 * JavaScript calls: `create(callback)` returns a handle; `start(handle, ms)` (re)arms it `ms` from
 * now; `stop(handle)`; `close(handle)` stops it for good and lets go of the callback (a closed
 * timer may be stopped and closed again, not started); `unref(handle)`: the armed timer no longer
 * keeps the process alive (as `setTimeout(...).unref()`). The callback
 * runs as a timer's would (`napi_make_callback`: microtasks after it, a throw goes to
 * `uncaughtException`). An armed timer keeps the process alive, as `setTimeout`'s does, unless unref'd.
 */
#include <node_api.h>
#include <stdlib.h>
#include <uv.h>

typedef struct loop_timer {
  uv_timer_t handle;
  napi_env env;
  napi_ref callback;
  napi_ref resource;
  napi_async_context context;
  int closed;
  /* Owners of this memory: libuv until the handle's close has completed, JavaScript until the
   * handle's external is collected. Freed when both have let go. */
  int owners;
  struct loop_timer* next;
  struct loop_timer** prev;
} loop_timer;

static void let_go(loop_timer* t) {
  if (--t->owners == 0) free(t);
}

static void on_closed(uv_handle_t* handle) {
  let_go(handle->data);
}

static void release(loop_timer* t) {
  if (t->closed) return;
  t->closed = 1;
  uv_timer_stop(&t->handle);
  if (t->next) t->next->prev = t->prev;
  *t->prev = t->next;
  napi_delete_reference(t->env, t->callback);
  napi_delete_reference(t->env, t->resource);
  napi_async_destroy(t->env, t->context);
  uv_close((uv_handle_t*)&t->handle, on_closed);
}

/* The timers of one environment (the main thread's, or a worker thread's), closed when it goes. */
typedef struct {
  loop_timer* head;
} timer_list;

/* The handle was collected: a timer still open is closed with it. */
static void finalize(napi_env env, void* data, void* hint) {
  (void)env;
  (void)hint;
  loop_timer* t = data;
  release(t);
  let_go(t);
}

static void cleanup(void* arg) {
  timer_list* list = arg;
  while (list->head) release(list->head);
  free(list);
}

static void on_timer(uv_timer_t* handle) {
  loop_timer* t = handle->data;
  napi_handle_scope scope;
  if (napi_open_handle_scope(t->env, &scope) != napi_ok) return;
  napi_value callback, resource;
  if (napi_get_reference_value(t->env, t->callback, &callback) == napi_ok
      && napi_get_reference_value(t->env, t->resource, &resource) == napi_ok) {
    if (napi_make_callback(t->env, t->context, resource, callback, 0, NULL, NULL) == napi_pending_exception) {
      /* As a timer's throw: to process.on('uncaughtException'), or the process ends. */
      napi_value error;
      if (napi_get_and_clear_last_exception(t->env, &error) == napi_ok) napi_fatal_exception(t->env, error);
    }
  }
  napi_close_handle_scope(t->env, scope);
}

/* The loop timer passed as the first of `n` arguments (read into `argv`); NULL after throwing. */
static loop_timer* timer_arg(napi_env env, napi_callback_info info, size_t n, napi_value* argv) {
  size_t argc = n;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  void* data = NULL;
  napi_valuetype type;
  if (argc < n || napi_typeof(env, argv[0], &type) != napi_ok || type != napi_external
      || napi_get_value_external(env, argv[0], &data) != napi_ok || data == NULL) {
    napi_throw_type_error(env, NULL, "expected a loop timer (what create returned) and its arguments");
    return NULL;
  }
  return data;
}

static napi_value create(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  napi_valuetype type;
  if (argc < 1 || napi_typeof(env, argv[0], &type) != napi_ok || type != napi_function) {
    napi_throw_type_error(env, NULL, "create(callback): callback must be a function");
    return NULL;
  }
  timer_list* list = NULL;
  napi_get_instance_data(env, (void**)&list);
  uv_loop_t* loop = NULL;
  if (list == NULL || napi_get_uv_event_loop(env, &loop) != napi_ok || loop == NULL) {
    napi_throw_error(env, NULL, "no event loop");
    return NULL;
  }
  loop_timer* t = calloc(1, sizeof *t);
  if (t == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  uv_timer_init(loop, &t->handle);
  t->handle.data = t;
  t->env = env;
  t->owners = 2;
  napi_value resource, name;
  napi_create_object(env, &resource);
  napi_create_string_utf8(env, "LoopTimer", NAPI_AUTO_LENGTH, &name);
  napi_async_init(env, resource, name, &t->context);
  napi_create_reference(env, argv[0], 1, &t->callback);
  napi_create_reference(env, resource, 1, &t->resource);
  t->next = list->head;
  t->prev = &list->head;
  if (list->head) list->head->prev = &t->next;
  list->head = t;
  napi_value out;
  napi_create_external(env, t, finalize, NULL, &out);
  return out;
}

static napi_value start(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  loop_timer* t = timer_arg(env, info, 2, argv);
  if (t == NULL) return NULL;
  if (t->closed) {
    napi_throw_error(env, NULL, "the loop timer is closed");
    return NULL;
  }
  double ms = 0;
  if (napi_get_value_double(env, argv[1], &ms) != napi_ok || !(ms >= 0)) {
    napi_throw_type_error(env, NULL, "start(timer, ms): ms must be a number >= 0");
    return NULL;
  }
  /* The loop's clock was read at the start of this turn: read it again, so the timer counts from now. */
  uv_update_time(t->handle.loop);
  uv_timer_start(&t->handle, on_timer, (uint64_t)(ms + 0.999), 0);
  return NULL;
}

/* Stopping or closing a closed timer does nothing, as with clearTimeout. */
static napi_value stop(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  loop_timer* t = timer_arg(env, info, 1, argv);
  if (t != NULL && !t->closed) uv_timer_stop(&t->handle);
  return NULL;
}

static napi_value unref_timer(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  loop_timer* t = timer_arg(env, info, 1, argv);
  if (t != NULL && !t->closed) uv_unref((uv_handle_t*)&t->handle);
  return NULL;
}

static napi_value close_timer(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  loop_timer* t = timer_arg(env, info, 1, argv);
  if (t != NULL) release(t);
  return NULL;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  timer_list* list = calloc(1, sizeof *list);
  if (list == NULL) return NULL;
  napi_set_instance_data(env, list, NULL, NULL);
  napi_add_env_cleanup_hook(env, cleanup, list);
  napi_property_descriptor props[] = {
    { "create", NULL, create, NULL, NULL, NULL, napi_default, NULL },
    { "start", NULL, start, NULL, NULL, NULL, napi_default, NULL },
    { "stop", NULL, stop, NULL, NULL, NULL, napi_default, NULL },
    { "close", NULL, close_timer, NULL, NULL, NULL, napi_default, NULL },
    { "unref", NULL, unref_timer, NULL, NULL, NULL, napi_default, NULL },
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
