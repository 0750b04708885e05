/*
 * lean-statements: runs the event store's hot write statements on the connection better-sqlite3
 * opened, without better-sqlite3's per-call costs.
 *
 * better-sqlite3's `Statement.run()` builds a result object (`{ changes, lastInsertRowid }`) with
 * two generic property stores, converts each string parameter to UTF-8 twice over (its length,
 * then a copy into a fresh allocation) and has SQLite copy it once more (SQLITE_TRANSIENT). At
 * saturation that was 7% of the server's main thread beside SQLite's own work (issue 10, `perf`
 * of the main thread): a third of it the result object, which the store's writes never read.
 * Here a statement is a native function: its parameters are bound from one pass over each string
 * into a buffer that lives for the call (SQLITE_STATIC), and it returns the number of rows changed.
 *
 * The same file is a Node addon and an SQLite extension. The store loads it as an extension into
 * its connection (`loadExtension(file, "sqlite3_leanstatements_init")`): the entry point notes that
 * connection, and `claim()` hands it to JavaScript right after (both on the same thread, with
 * nothing in between). Every call into SQLite goes through the routines SQLite gave the extension,
 * so it is better-sqlite3's own SQLite, on the same connection, inside the same transactions.
 *
 * JavaScript calls:
 *  - `claim()`: the connection that loaded the extension last, as a handle; throws if none did.
 *  - `prepare(conn, sql)`: a function `run(...params)` for one statement (no rows returned). It binds
 *    as better-sqlite3 binds (numbers as doubles, bigints as 64-bit integers, strings as UTF-8 text,
 *    buffers as blobs, null and undefined as NULL; anything else is a TypeError; a lone surrogate
 *    in a string as the three bytes V8's UTF-8 writer gives it, as better-sqlite3 stores it), steps the
 *    statement to its end, resets it and returns the rows it changed. An SQLite error is thrown as
 *    an Error whose `code` names the extended result code ("SQLITE_CONSTRAINT_UNIQUE", ...), as
 *    better-sqlite3 names it, and whose message is SQLite's.
 *  - `release(conn)`: finalizes every statement prepared on the connection (before the connection
 *    is closed: SQLite does not close a connection with statements left). A released connection's
 *    statements throw when run.
 */
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1
#include <node_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uchar.h>

typedef struct lean_stmt lean_stmt;
typedef struct lean_conn {
  sqlite3* db;
  int released;
  lean_stmt* stmts;
} lean_conn;

struct lean_stmt {
  sqlite3_stmt* stmt;
  lean_conn* conn;
  lean_stmt* next;
  lean_stmt** prev;
};

/* The connection whose load of the extension has not been claimed yet. */
static sqlite3* g_loaded = NULL;

int sqlite3_leanstatements_init(sqlite3* db, char** err, const sqlite3_api_routines* api) {
  (void)err;
  SQLITE_EXTENSION_INIT2(api);
  g_loaded = db;
  return SQLITE_OK;
}

/* Per Node environment (thread): the buffer strings are converted into for one call. */
typedef struct lean_env {
  char* buf;
  size_t cap;
  /* Runs in progress on this thread (more than one only if a step called back into JavaScript). */
  int busy;
} lean_env;

static void env_free(napi_env env, void* data, void* hint) {
  (void)env;
  (void)hint;
  lean_env* e = data;
  free(e->buf);
  free(e);
}

static const char* code_name(int rc) {
  switch (rc) {
    case SQLITE_ERROR: return "SQLITE_ERROR";
    case SQLITE_INTERNAL: return "SQLITE_INTERNAL";
    case SQLITE_PERM: return "SQLITE_PERM";
    case SQLITE_ABORT: return "SQLITE_ABORT";
    case SQLITE_BUSY: return "SQLITE_BUSY";
    case SQLITE_BUSY_RECOVERY: return "SQLITE_BUSY_RECOVERY";
    case SQLITE_BUSY_SNAPSHOT: return "SQLITE_BUSY_SNAPSHOT";
    case SQLITE_BUSY_TIMEOUT: return "SQLITE_BUSY_TIMEOUT";
    case SQLITE_LOCKED: return "SQLITE_LOCKED";
    case SQLITE_NOMEM: return "SQLITE_NOMEM";
    case SQLITE_READONLY: return "SQLITE_READONLY";
    case SQLITE_INTERRUPT: return "SQLITE_INTERRUPT";
    case SQLITE_IOERR: return "SQLITE_IOERR";
    case SQLITE_IOERR_READ: return "SQLITE_IOERR_READ";
    case SQLITE_IOERR_SHORT_READ: return "SQLITE_IOERR_SHORT_READ";
    case SQLITE_IOERR_WRITE: return "SQLITE_IOERR_WRITE";
    case SQLITE_IOERR_FSYNC: return "SQLITE_IOERR_FSYNC";
    case SQLITE_IOERR_TRUNCATE: return "SQLITE_IOERR_TRUNCATE";
    case SQLITE_IOERR_FSTAT: return "SQLITE_IOERR_FSTAT";
    case SQLITE_IOERR_NOMEM: return "SQLITE_IOERR_NOMEM";
    case SQLITE_IOERR_SHMMAP: return "SQLITE_IOERR_SHMMAP";
    case SQLITE_CORRUPT: return "SQLITE_CORRUPT";
    case SQLITE_NOTFOUND: return "SQLITE_NOTFOUND";
    case SQLITE_FULL: return "SQLITE_FULL";
    case SQLITE_CANTOPEN: return "SQLITE_CANTOPEN";
    case SQLITE_PROTOCOL: return "SQLITE_PROTOCOL";
    case SQLITE_SCHEMA: return "SQLITE_SCHEMA";
    case SQLITE_TOOBIG: return "SQLITE_TOOBIG";
    case SQLITE_CONSTRAINT: return "SQLITE_CONSTRAINT";
    case SQLITE_CONSTRAINT_CHECK: return "SQLITE_CONSTRAINT_CHECK";
    case SQLITE_CONSTRAINT_FOREIGNKEY: return "SQLITE_CONSTRAINT_FOREIGNKEY";
    case SQLITE_CONSTRAINT_NOTNULL: return "SQLITE_CONSTRAINT_NOTNULL";
    case SQLITE_CONSTRAINT_PRIMARYKEY: return "SQLITE_CONSTRAINT_PRIMARYKEY";
    case SQLITE_CONSTRAINT_TRIGGER: return "SQLITE_CONSTRAINT_TRIGGER";
    case SQLITE_CONSTRAINT_UNIQUE: return "SQLITE_CONSTRAINT_UNIQUE";
    case SQLITE_CONSTRAINT_ROWID: return "SQLITE_CONSTRAINT_ROWID";
    case SQLITE_CONSTRAINT_DATATYPE: return "SQLITE_CONSTRAINT_DATATYPE";
    case SQLITE_MISMATCH: return "SQLITE_MISMATCH";
    case SQLITE_MISUSE: return "SQLITE_MISUSE";
    case SQLITE_RANGE: return "SQLITE_RANGE";
    case SQLITE_NOTADB: return "SQLITE_NOTADB";
    default: break;
  }
  /* Extended codes not named above go by their primary code's name. */
  switch (rc & 0xff) {
    case SQLITE_IOERR: return "SQLITE_IOERR";
    case SQLITE_CONSTRAINT: return "SQLITE_CONSTRAINT";
    case SQLITE_BUSY: return "SQLITE_BUSY";
    case SQLITE_LOCKED: return "SQLITE_LOCKED";
    case SQLITE_READONLY: return "SQLITE_READONLY";
    case SQLITE_CANTOPEN: return "SQLITE_CANTOPEN";
    case SQLITE_CORRUPT: return "SQLITE_CORRUPT";
    case SQLITE_ABORT: return "SQLITE_ABORT";
    default: return "SQLITE_ERROR";
  }
}

static void throw_sqlite(napi_env env, int rc, const char* message) {
  napi_value code, msg, error;
  napi_create_string_utf8(env, code_name(rc), NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &msg);
  napi_create_error(env, code, msg, &error);
  napi_throw(env, error);
}

static void unlink_stmt(lean_stmt* s) {
  if (!s->prev) return;
  if (s->next) s->next->prev = s->prev;
  *s->prev = s->next;
  s->next = NULL;
  s->prev = NULL;
}

/* The statement's function was collected: its statement goes (unless its connection's release took it). */
static void stmt_free(napi_env env, void* data, void* hint) {
  (void)env;
  (void)hint;
  lean_stmt* s = data;
  if (s->stmt) sqlite3_finalize(s->stmt);
  unlink_stmt(s);
  free(s);
}

/* Lets go of every statement of `c`'s list: finalized now (a release), or left to its function's finalizer. */
static void detach_stmts(lean_conn* c, int finalize) {
  for (lean_stmt* s = c->stmts; s;) {
    lean_stmt* next = s->next;
    if (finalize) {
      sqlite3_finalize(s->stmt);
      s->stmt = NULL;
    }
    s->conn = NULL;
    s->next = NULL;
    s->prev = NULL;
    s = next;
  }
  c->stmts = NULL;
}

static void conn_free(napi_env env, void* data, void* hint) {
  (void)env;
  (void)hint;
  /* Collected without a release: its statements stay with their functions, which finalize them. */
  detach_stmts(data, 0);
  free(data);
}

static lean_env* env_data(napi_env env) {
  lean_env* e = NULL;
  if (napi_get_instance_data(env, (void**)&e) == napi_ok && e) return e;
  e = calloc(1, sizeof *e);
  if (!e) return NULL;
  napi_set_instance_data(env, e, env_free, NULL);
  return e;
}

/*
 * `value` as better-sqlite3 binds a string (V8's `String::Utf8Value`): UTF-8, except that a lone
 * surrogate is written as the three bytes of its code unit (as WTF-8 does) where Node's
 * `napi_get_value_string_utf8` writes U+FFFD. Called only for text whose UTF-8 holds U+FFFD, which
 * a lone surrogate or a U+FFFD of its own made: rare, so the slow way. `out` has room for 3 bytes
 * per UTF-16 unit; returns the bytes written, or -1 when out of memory.
 */
static long wtf8_of(napi_env env, napi_value value, size_t units, char* out) {
  char16_t* u = malloc((units + 1) * sizeof *u);
  if (!u) return -1;
  size_t got = 0;
  napi_get_value_string_utf16(env, value, u, units + 1, &got);
  unsigned char* o = (unsigned char*)out;
  for (size_t i = 0; i < got; i++) {
    unsigned c = u[i];
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < got && u[i + 1] >= 0xdc00 && u[i + 1] <= 0xdfff) {
      unsigned cp = 0x10000 + ((c - 0xd800) << 10) + (u[i + 1] - 0xdc00);
      *o++ = 0xf0 | (cp >> 18);
      *o++ = 0x80 | ((cp >> 12) & 0x3f);
      *o++ = 0x80 | ((cp >> 6) & 0x3f);
      *o++ = 0x80 | (cp & 0x3f);
      i++;
    } else if (c < 0x80) {
      *o++ = c;
    } else if (c < 0x800) {
      *o++ = 0xc0 | (c >> 6);
      *o++ = 0x80 | (c & 0x3f);
    } else {
      *o++ = 0xe0 | (c >> 12);
      *o++ = 0x80 | ((c >> 6) & 0x3f);
      *o++ = 0x80 | (c & 0x3f);
    }
  }
  free(u);
  return (long)((char*)o - out);
}

/* Whether `s` (n bytes of UTF-8) holds U+FFFD (EF BF BD). */
static int has_replacement(const char* s, size_t n) {
  const char* end = s + n;
  for (const char* p = s; (p = memchr(p, 0xef, (size_t)(end - p))) != NULL; p++) {
    if (end - p >= 3 && (unsigned char)p[1] == 0xbf && (unsigned char)p[2] == 0xbd) return 1;
  }
  return 0;
}

#define MAX_ARGS 1024
/* The call buffer kept between runs at most (bytes); a larger one is given back after its run. */
#define KEEP_BUFFER_BYTES (1 << 20)

static napi_value run_stmt(napi_env env, napi_callback_info info) {
  size_t argc = MAX_ARGS;
  napi_value argv[MAX_ARGS];
  lean_stmt* s;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, (void**)&s) != napi_ok) return NULL;
  if (argc > MAX_ARGS) {
    napi_throw_range_error(env, NULL, "lean-statements: too many parameters");
    return NULL;
  }
  if (!s->stmt || !s->conn || s->conn->released) {
    napi_throw_error(env, NULL, "lean-statements: the statement's connection is closed");
    return NULL;
  }
  sqlite3_stmt* stmt = s->stmt;
  sqlite3* db = s->conn->db;
  int expected = sqlite3_bind_parameter_count(stmt);
  if ((int)argc != expected) {
    char message[96];
    snprintf(message, sizeof message, "lean-statements: the statement takes %d parameters, %zu were given", expected, argc);
    napi_throw_range_error(env, NULL, message);
    return NULL;
  }
  /* The strings' room: each UTF-16 unit takes at most 3 bytes of UTF-8 (a surrogate pair, 2 units, takes 4). */
  napi_valuetype types[MAX_ARGS];
  size_t need = 0;
  for (size_t i = 0; i < argc; i++) {
    napi_typeof(env, argv[i], &types[i]);
    if (types[i] == napi_string) {
      size_t units = 0;
      napi_get_value_string_utf16(env, argv[i], NULL, 0, &units);
      need += units * 3 + 1;
    }
  }
  lean_env* e = env_data(env);
  if (!e) {
    napi_throw_error(env, NULL, "lean-statements: out of memory");
    return NULL;
  }
  /* The environment's buffer, unless a run is already in progress on this thread (a statement
   * whose step called back into JavaScript that ran another): that one gets a buffer of its own. */
  char* buf = NULL;
  int own = e->busy > 0;
  if (own) {
    buf = malloc(need ? need : 1);
  } else if (need > e->cap) {
    size_t cap = need < 65536 ? 65536 : need;
    char* grown = realloc(e->buf, cap);
    if (grown) {
      e->buf = grown;
      e->cap = cap;
    }
    buf = grown;
  } else {
    buf = e->buf;
  }
  if (need > 0 && !buf) {
    napi_throw_error(env, NULL, "lean-statements: out of memory");
    return NULL;
  }
  e->busy++;
  napi_value result = NULL;
  size_t used = 0;
  int rc = SQLITE_OK;
  const char* refused = NULL;
  for (size_t i = 0; i < argc && rc == SQLITE_OK && !refused; i++) {
    int at = (int)i + 1;
    switch (types[i]) {
      case napi_number: {
        double d;
        napi_get_value_double(env, argv[i], &d);
        rc = sqlite3_bind_double(stmt, at, d);
        break;
      }
      case napi_string: {
        size_t room = need - used, written = 0;
        napi_get_value_string_utf8(env, argv[i], buf + used, room, &written);
        if (has_replacement(buf + used, written)) {
          size_t units = 0;
          napi_get_value_string_utf16(env, argv[i], NULL, 0, &units);
          long n = wtf8_of(env, argv[i], units, buf + used);
          if (n < 0) {
            refused = "lean-statements: out of memory";
            break;
          }
          written = (size_t)n;
        }
        rc = sqlite3_bind_text(stmt, at, buf + used, (int)written, SQLITE_STATIC);
        used += written + 1;
        break;
      }
      case napi_null:
      case napi_undefined:
        rc = sqlite3_bind_null(stmt, at);
        break;
      case napi_bigint: {
        int64_t v;
        bool lossless;
        napi_get_value_bigint_int64(env, argv[i], &v, &lossless);
        if (!lossless) refused = "The bound BigInt is too big to be an SQLite integer";
        else rc = sqlite3_bind_int64(stmt, at, v);
        break;
      }
      case napi_object: {
        bool is_buffer = false;
        napi_is_buffer(env, argv[i], &is_buffer);
        if (is_buffer) {
          void* data = NULL;
          size_t length = 0;
          napi_get_buffer_info(env, argv[i], &data, &length);
          rc = sqlite3_bind_blob(stmt, at, data ? data : "", (int)length, SQLITE_STATIC);
          break;
        }
      }
      /* fall through */
      default:
        refused = "SQLite3 can only bind numbers, strings, bigints, buffers, and null";
        break;
    }
  }
  if (refused) {
    if (strncmp(refused, "SQLite3", 7) == 0) napi_throw_type_error(env, NULL, refused);
    else if (strncmp(refused, "The bound", 9) == 0) napi_throw_range_error(env, NULL, refused);
    else napi_throw_error(env, NULL, refused);
  } else if (rc != SQLITE_OK) {
    throw_sqlite(env, rc, sqlite3_errmsg(db));
  } else {
    sqlite3_int64 before = sqlite3_total_changes64(db);
    rc = sqlite3_step(stmt);
    while (rc == SQLITE_ROW) rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE) {
      int code = sqlite3_extended_errcode(db);
      /* The message is SQLite's for this error; copied before the reset may change it. */
      char* message = sqlite3_mprintf("%s", sqlite3_errmsg(db));
      sqlite3_reset(stmt);
      throw_sqlite(env, code, message ? message : "SQLite error");
      sqlite3_free(message);
    } else {
      int changes = sqlite3_total_changes64(db) == before ? 0 : sqlite3_changes(db);
      sqlite3_reset(stmt);
      napi_create_int32(env, changes, &result);
    }
  }
  /* The bound text lives in the call's buffer: nothing may point into it once the call is over. */
  sqlite3_clear_bindings(stmt);
  e->busy--;
  if (own) {
    free(buf);
  } else if (e->cap > KEEP_BUFFER_BYTES) {
    /* A large text once (a big request body) does not keep its room for the process's life. */
    free(e->buf);
    e->buf = NULL;
    e->cap = 0;
  }
  return result;
}

static napi_value claim(napi_env env, napi_callback_info info) {
  (void)info;
  if (!g_loaded) {
    napi_throw_error(env, NULL, "lean-statements: no connection has loaded the extension");
    return NULL;
  }
  lean_conn* c = calloc(1, sizeof *c);
  if (!c) {
    napi_throw_error(env, NULL, "lean-statements: out of memory");
    return NULL;
  }
  c->db = g_loaded;
  g_loaded = NULL;
  napi_value handle;
  if (napi_create_external(env, c, conn_free, NULL, &handle) != napi_ok) {
    free(c);
    return NULL;
  }
  return handle;
}

/* The call's arguments (`want` of them into `argv`), the first a connection handle; NULL (with a TypeError thrown) otherwise. */
static lean_conn* conn_call(napi_env env, napi_callback_info info, size_t want, napi_value* argv, const char* usage) {
  size_t argc = want;
  napi_valuetype type;
  lean_conn* c = NULL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < want || napi_typeof(env, argv[0], &type) != napi_ok
      || type != napi_external || napi_get_value_external(env, argv[0], (void**)&c) != napi_ok || !c) {
    napi_throw_type_error(env, NULL, usage);
    return NULL;
  }
  return c;
}

static napi_value prepare(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  lean_conn* c = conn_call(env, info, 2, argv, "lean-statements: prepare(conn, sql) takes a connection handle and SQL");
  if (!c) return NULL;
  if (c->released) {
    napi_throw_error(env, NULL, "lean-statements: the connection is closed");
    return NULL;
  }
  size_t length = 0;
  if (napi_get_value_string_utf8(env, argv[1], NULL, 0, &length) != napi_ok) {
    napi_throw_type_error(env, NULL, "lean-statements: the SQL must be a string");
    return NULL;
  }
  char* sql = malloc(length + 1);
  if (!sql) {
    napi_throw_error(env, NULL, "lean-statements: out of memory");
    return NULL;
  }
  napi_get_value_string_utf8(env, argv[1], sql, length + 1, &length);
  sqlite3_stmt* stmt = NULL;
  const char* tail = NULL;
  int rc = sqlite3_prepare_v3(c->db, sql, (int)length, SQLITE_PREPARE_PERSISTENT, &stmt, &tail);
  int trailing = rc == SQLITE_OK && tail && *tail != '\0';
  free(sql);
  if (rc != SQLITE_OK) {
    throw_sqlite(env, sqlite3_extended_errcode(c->db), sqlite3_errmsg(c->db));
    return NULL;
  }
  if (!stmt || trailing || sqlite3_column_count(stmt) > 0) {
    sqlite3_finalize(stmt);
    napi_throw_range_error(env, NULL, "lean-statements: one statement that returns no rows is expected");
    return NULL;
  }
  lean_stmt* s = calloc(1, sizeof *s);
  if (!s) {
    sqlite3_finalize(stmt);
    napi_throw_error(env, NULL, "lean-statements: out of memory");
    return NULL;
  }
  napi_value fn;
  int made = napi_create_function(env, "run", NAPI_AUTO_LENGTH, run_stmt, s, &fn) == napi_ok;
  if (!made || napi_add_finalizer(env, fn, s, stmt_free, NULL, NULL) != napi_ok) {
    sqlite3_finalize(stmt);
    /* A function made without its finalizer names `s`: `s` stays, statementless (a run throws "closed"). */
    if (!made) free(s);
    return NULL;
  }
  /* On the connection's list once its function owns it, for the connection's release. */
  s->stmt = stmt;
  s->conn = c;
  s->next = c->stmts;
  if (c->stmts) c->stmts->prev = &s->next;
  s->prev = &c->stmts;
  c->stmts = s;
  return fn;
}

static napi_value release(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  lean_conn* c = conn_call(env, info, 1, argv, "lean-statements: release(conn) takes a connection handle");
  if (!c) return NULL;
  c->released = 1;
  detach_stmts(c, 1);
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor props[] = {
    {"claim", NULL, claim, NULL, NULL, NULL, napi_default, NULL},
    {"prepare", NULL, prepare, NULL, NULL, NULL, napi_default, NULL},
    {"release", NULL, release, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
