/*
 * lean-digest: the two digests the server makes for every delivered event, without the cost of
 * reaching them through `node:crypto`.
 *
 * Every delivery is signed (HMAC-SHA256 of "<webhook-id>.<timestamp>.<body>", Standard Webhooks)
 * and gets an id derived by SHA-1 (`uuidv8ordered`). Through `node:crypto` each is a new
 * `Hmac` or a one-shot `hash()`: OpenSSL 3's EVP layer looks the algorithm up by name, fetches
 * it from its provider and sets up three digest contexts (HMAC's inner, outer and key) before it
 * hashes anything. On these machines that was 1.6-1.8 us a signature in a hot loop and 14-45 us
 * for the first one after 5 ms asleep (its code and data gone cold), 4-5% of the server's main
 * thread at 200 events/s (`perf`). This library calls the same OpenSSL (the one Node is linked
 * with, its symbols resolved from the process) at its low-level SHA-256 and SHA-1 routines, which
 * dispatch straight to the CPU's SHA instructions where it has them, and keeps each key's HMAC
 * pads already hashed: 0.3 us hot and about 3 us cold a signature.
 *
 * JavaScript calls:
 * - `hmacSha256Key(key)`: the state of HMAC-SHA256 with the bytes of `key` (a Uint8Array) as its
 *   key, its inner and outer pads hashed (RFC 2104), as a Buffer to keep with the key; a key
 *   longer than SHA-256's 64-byte block is hashed first, as HMAC asks.
 * - `hmacSha256Base64(state, ...texts)`: base64 (with padding) of the HMAC-SHA256 of the texts'
 *   UTF-8 bytes one after the other, with the key of `state`; 1 to 4 texts.
 * - `sha1Into(text, out)`: SHA-1 of the text's UTF-8 bytes written into the first 20 bytes of the
 *   Uint8Array `out`.
 * Texts become UTF-8 as `Buffer.from(text)` and `hash.update(text)` make them (a lone surrogate
 * as U+FFFD), so a digest is the one `node:crypto` would make of the same string. Arguments of the
 * wrong kind throw a TypeError naming the argument.
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#define OPENSSL_API_COMPAT 0x10100000L
#include <node_api.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

/* Texts up to this many UTF-8 bytes are converted on the stack; longer ones into a buffer of their size. */
#define STACK_TEXT 4096
#define MAX_TEXTS 4

typedef struct {
  SHA256_CTX inner;
  SHA256_CTX outer;
} hmac_state;

static napi_value throw_type(napi_env env, const char* message) {
  napi_throw_type_error(env, NULL, message);
  return NULL;
}

/*
 * The UTF-8 bytes of a string: into `stack` when they fit, else into memory of their size that
 * `*heap` then owns (the caller frees it). Returns the bytes (NULL with an exception pending).
 */
static const char* utf8_of(napi_env env, napi_value value, char* stack, char** heap, size_t* length, const char* not_string) {
  size_t copied = 0;
  *heap = NULL;
  if (napi_get_value_string_utf8(env, value, stack, STACK_TEXT, &copied) != napi_ok) {
    throw_type(env, not_string);
    return NULL;
  }
  /* The copy stops before a character that does not fit whole, leaving up to 3 of the buffer's
   * bytes unused (and one for the NUL): with 5 or more unused the whole text is there. */
  if (copied + 5 <= STACK_TEXT) {
    *length = copied;
    return stack;
  }
  size_t full = 0;
  if (napi_get_value_string_utf8(env, value, NULL, 0, &full) != napi_ok) {
    throw_type(env, not_string);
    return NULL;
  }
  *heap = malloc(full + 1);
  if (*heap == NULL) {
    napi_throw_error(env, "ERR_MEMORY_ALLOCATION_FAILED", "lean-digest: out of memory for a text");
    return NULL;
  }
  if (napi_get_value_string_utf8(env, value, *heap, full + 1, &copied) != napi_ok) {
    free(*heap);
    *heap = NULL;
    throw_type(env, not_string);
    return NULL;
  }
  *length = copied;
  return *heap;
}

/* The bytes of a Uint8Array (a Buffer is one); 0 when `value` is none. */
static int bytes_of(napi_env env, napi_value value, unsigned char** data, size_t* length) {
  bool is = false;
  if (napi_is_typedarray(env, value, &is) != napi_ok || !is) return 0;
  napi_typedarray_type type;
  void* start = NULL;
  if (napi_get_typedarray_info(env, value, &type, length, &start, NULL, NULL) != napi_ok) return 0;
  if (type != napi_uint8_array) return 0;
  *data = start;
  return 1;
}

static napi_value hmac_sha256_key(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  unsigned char* key = NULL;
  size_t key_length = 0;
  if (argc < 1 || !bytes_of(env, argv[0], &key, &key_length)) return throw_type(env, "hmacSha256Key: key must be a Uint8Array");
  unsigned char block[SHA256_CBLOCK];
  memset(block, 0, sizeof block);
  if (key_length > SHA256_CBLOCK) {
    /* The one-shot SHA256() goes through the EVP layer in OpenSSL 3: the context routines do not. */
    SHA256_CTX long_key;
    SHA256_Init(&long_key);
    SHA256_Update(&long_key, key, key_length);
    SHA256_Final(block, &long_key);
  } else if (key_length > 0) {
    memcpy(block, key, key_length);
  }
  unsigned char pad[SHA256_CBLOCK];
  hmac_state state;
  for (size_t i = 0; i < SHA256_CBLOCK; i++) pad[i] = block[i] ^ 0x36;
  SHA256_Init(&state.inner);
  SHA256_Update(&state.inner, pad, sizeof pad);
  for (size_t i = 0; i < SHA256_CBLOCK; i++) pad[i] = block[i] ^ 0x5c;
  SHA256_Init(&state.outer);
  SHA256_Update(&state.outer, pad, sizeof pad);
  memset(block, 0, sizeof block);
  memset(pad, 0, sizeof pad);
  napi_value result;
  void* copy;
  napi_status status = napi_create_buffer_copy(env, sizeof state, &state, &copy, &result);
  memset(&state, 0, sizeof state);
  return status == napi_ok ? result : NULL;
}

static const char BASE64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static napi_value hmac_sha256_base64(napi_env env, napi_callback_info info) {
  size_t argc = MAX_TEXTS + 1;
  napi_value argv[MAX_TEXTS + 1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  unsigned char* state_bytes = NULL;
  size_t state_length = 0;
  if (argc < 1 || !bytes_of(env, argv[0], &state_bytes, &state_length) || state_length != sizeof(hmac_state)) {
    return throw_type(env, "hmacSha256Base64: state must be what hmacSha256Key returned");
  }
  if (argc < 2) return throw_type(env, "hmacSha256Base64: at least one text is needed");
  hmac_state state;
  memcpy(&state, state_bytes, sizeof state);
  char stack[STACK_TEXT];
  for (size_t i = 1; i < argc; i++) {
    char* heap;
    size_t length;
    const char* text = utf8_of(env, argv[i], stack, &heap, &length, "hmacSha256Base64: each text must be a string");
    if (text == NULL) {
      memset(&state, 0, sizeof state);
      return NULL;
    }
    SHA256_Update(&state.inner, text, length);
    free(heap);
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256_Final(digest, &state.inner);
  SHA256_Update(&state.outer, digest, sizeof digest);
  SHA256_Final(digest, &state.outer);
  memset(&state, 0, sizeof state);
  /* 32 bytes: ten groups of three, then two bytes and one '='. */
  char out[44];
  size_t o = 0;
  for (size_t i = 0; i < 30; i += 3) {
    unsigned v = (unsigned)digest[i] << 16 | (unsigned)digest[i + 1] << 8 | digest[i + 2];
    out[o++] = BASE64[v >> 18];
    out[o++] = BASE64[(v >> 12) & 63];
    out[o++] = BASE64[(v >> 6) & 63];
    out[o++] = BASE64[v & 63];
  }
  unsigned v = (unsigned)digest[30] << 16 | (unsigned)digest[31] << 8;
  out[o++] = BASE64[v >> 18];
  out[o++] = BASE64[(v >> 12) & 63];
  out[o++] = BASE64[(v >> 6) & 63];
  out[o++] = '=';
  napi_value result;
  return napi_create_string_latin1(env, out, sizeof out, &result) == napi_ok ? result : NULL;
}

static napi_value sha1_into(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  unsigned char* out = NULL;
  size_t out_length = 0;
  if (argc < 2 || !bytes_of(env, argv[1], &out, &out_length) || out_length < SHA_DIGEST_LENGTH) {
    return throw_type(env, "sha1Into: out must be a Uint8Array of at least 20 bytes");
  }
  char stack[STACK_TEXT];
  char* heap;
  size_t length;
  const char* text = utf8_of(env, argv[0], stack, &heap, &length, "sha1Into: text must be a string");
  if (text == NULL) return NULL;
  SHA_CTX context;
  SHA1_Init(&context);
  SHA1_Update(&context, text, length);
  free(heap);
  SHA1_Final(out, &context);
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor properties[] = {
    {"hmacSha256Key", NULL, hmac_sha256_key, NULL, NULL, NULL, napi_enumerable, NULL},
    {"hmacSha256Base64", NULL, hmac_sha256_base64, NULL, NULL, NULL, napi_enumerable, NULL},
    {"sha1Into", NULL, sha1_into, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties) != napi_ok) return NULL;
  return exports;
}
