/*
 * mlbridge C API.
 *
 * A C99 header (also valid C++) over the C++ library: a compiler written in C,
 * or any language with a C FFI, asks ML models for decisions through one
 * runner handle, whatever the model is (a Python process over named pipes,
 * the built-in ONNX engine, ...). docs/c-api.md is the guide; this file is
 * the reference.
 *
 * Conventions (ONNX Runtime / DLPack style):
 *
 *  - Every symbol starts with mlb_ / MLB_. Objects are opaque handles
 *    (mlb_runner, mlb_spec, mlb_pipe_options, mlb_error, ...), created by
 *    *_create functions and released by *_destroy / *_free (NULL is accepted
 *    and ignored). No struct layout is public, so handles can grow without
 *    breaking the ABI; the one exception, mlb_rl_environment (a table of
 *    callbacks), starts with its own size and only ever grows at the end.
 *
 *  - Every call that can fail returns an mlb_status: MLB_OK (0) or an error
 *    code; the numbering is mlbridge::StatusCode's (gRPC's). Where the message
 *    goes depends on whether the call has a runner:
 *      * calls on a runner (mlb_runner_*(r, ...)) store it in the runner:
 *        mlb_runner_last_error(r) returns the message of the most recent call
 *        on r ("" when that call succeeded), valid until the next call on r;
 *      * every other call takes a last parameter `mlb_error** error`. Pass
 *        NULL to ignore the message. Otherwise, on failure *error receives a
 *        new mlb_error (code + message) that the caller owns and frees with
 *        mlb_error_free; on success *error is left unchanged. Initialize the
 *        variable to NULL: an error it still holds when a call fails is
 *        freed and replaced, so one variable can serve many calls.
 *    The only functions that do not return an mlb_status are the ones that
 *    cannot fail: *_destroy / *_free, name and size look-ups on enum values,
 *    the version queries, and accessors of an immutable mlb_spec.
 *    A NULL runner is MLB_INVALID_ARGUMENT with no message (there is nowhere
 *    to put it). An index out of range is MLB_OUT_OF_RANGE.
 *
 *  - Thread-safety: a runner is used by one thread at a time (as the C++
 *    ModelRunner); its last-error message belongs to it, so different runners
 *    can be used from different threads at once with no shared state.
 *    mlb_spec, mlb_onnx_model and mlb_onnxruntime_model objects are
 *    immutable once created and may be shared between threads, as may an
 *    mlb_grpc_channel. mlb_error objects are owned by whoever
 *    received them. Options objects are plain data: do not modify one while
 *    another thread creates a runner from it.
 *
 *  - The library never aborts, exits, prints or lets a C++ exception cross
 *    this boundary (an allocation failure is reported as
 *    MLB_RESOURCE_EXHAUSTED). Diagnostics go to the log hook, if one is set.
 *
 *  - Versioning: MLB_API_VERSION is the API level this header declares;
 *    mlb_api_version() is the level the linked library implements. Levels
 *    only add functions and enum values; nothing is removed or renumbered.
 *    A program that uses functions of level N checks
 *    `mlb_api_version() >= N` (MLB_LIBRARY_IS_COMPATIBLE() for this header's
 *    level) before relying on them. Unknown status codes must be treated as
 *    errors. Every function in this file is level 1.
 *
 *  - Strings are UTF-8 and NUL-terminated unless a length is given;
 *    MLB_NUL_TERMINATED as a length means "up to the first NUL". Strings the
 *    library returns through `char**` are owned by the caller
 *    (mlb_string_free); `const char*` results are borrowed (lifetime given at
 *    each function).
 */
#ifndef MLBRIDGE_MLBRIDGE_H
#define MLBRIDGE_MLBRIDGE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define MLB_API __attribute__((visibility("default")))
#else
#define MLB_API
#endif

#if defined(__cplusplus) && __cplusplus >= 201103L
#define MLB_NOEXCEPT noexcept
#elif defined(__cplusplus)
#define MLB_NOEXCEPT throw()
#else
#define MLB_NOEXCEPT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==== versions ========================================================== */

/* Version of the library this header belongs to (semantic versioning). */
#define MLB_VERSION_MAJOR 0
#define MLB_VERSION_MINOR 1
#define MLB_VERSION_PATCH 0
/* API level declared by this header. */
#define MLB_API_VERSION 1

/* Version of the linked library, "0.1.0". Static storage. */
MLB_API const char* mlb_version_string(void) MLB_NOEXCEPT;
/* API level the linked library implements (>= 1). */
MLB_API uint32_t mlb_api_version(void) MLB_NOEXCEPT;
/* True when the linked library implements everything this header declares. */
#define MLB_LIBRARY_IS_COMPATIBLE() (mlb_api_version() >= MLB_API_VERSION)

/* ==== status codes and errors =========================================== */

/* Status codes: the numbering of mlbridge::StatusCode (and of gRPC). */
typedef int32_t mlb_status;
enum {
  MLB_OK = 0,
  MLB_CANCELLED = 1,
  MLB_UNKNOWN = 2,
  MLB_INVALID_ARGUMENT = 3,    /* caller error: bad spec, wrong dtype or count, unknown enum value */
  MLB_DEADLINE_EXCEEDED = 4,   /* a timeout expired */
  MLB_NOT_FOUND = 5,           /* no such feature / output / file */
  MLB_ALREADY_EXISTS = 6,
  MLB_PERMISSION_DENIED = 7,   /* e.g. channel folder not private */
  MLB_RESOURCE_EXHAUSTED = 8,  /* out of memory, frame over the size limit */
  MLB_FAILED_PRECONDITION = 9, /* wrong state: session ended or broken, no outputs yet */
  MLB_ABORTED = 10,            /* the model reported an error for this request */
  MLB_OUT_OF_RANGE = 11,       /* index out of range */
  MLB_UNIMPLEMENTED = 12,      /* format cannot carry this dtype; component not built */
  MLB_INTERNAL = 13,
  MLB_UNAVAILABLE = 14,        /* peer gone: EOF, EPIPE, channel never appeared */
  MLB_DATA_LOSS = 15           /* malformed or truncated message or JSON */
};

/* "OK", "INVALID_ARGUMENT", ...; "UNKNOWN" for codes this library does not know. */
MLB_API const char* mlb_status_name(mlb_status code) MLB_NOEXCEPT;

/* An error returned through an `mlb_error** error` parameter. */
typedef struct mlb_error mlb_error;
/* The code (MLB_OK for NULL). */
MLB_API mlb_status mlb_error_code(const mlb_error* error) MLB_NOEXCEPT;
/* The message ("" for NULL); valid until mlb_error_free(error). */
MLB_API const char* mlb_error_message(const mlb_error* error) MLB_NOEXCEPT;
MLB_API void mlb_error_free(mlb_error* error) MLB_NOEXCEPT;
/* A new error, for callbacks that report one to the library (which then owns
   and frees it). Never NULL: without memory it is a shared "out of memory"
   error that mlb_error_free ignores. A NULL message is "". */
MLB_API mlb_error* mlb_error_new(mlb_status code, const char* message) MLB_NOEXCEPT;

/* Frees a string the library returned through a `char**` parameter. */
MLB_API void mlb_string_free(char* s) MLB_NOEXCEPT;

#define MLB_NUL_TERMINATED SIZE_MAX

/* ==== element types ===================================================== */

/* The wire numbering (protobuf DType); frozen, values are only added. */
typedef int32_t mlb_dtype;
enum {
  MLB_DTYPE_INVALID = 0,
  MLB_DTYPE_FLOAT32 = 1, /* float */
  MLB_DTYPE_FLOAT64 = 2, /* double */
  MLB_DTYPE_INT8 = 3,
  MLB_DTYPE_UINT8 = 4,
  MLB_DTYPE_INT16 = 5,
  MLB_DTYPE_UINT16 = 6,
  MLB_DTYPE_INT32 = 7,
  MLB_DTYPE_UINT32 = 8,
  MLB_DTYPE_INT64 = 9,
  MLB_DTYPE_UINT64 = 10,
  MLB_DTYPE_BOOL = 11,   /* one byte, 0 or 1 (uint8_t / _Bool storage) */
  MLB_DTYPE_STRING = 12  /* UTF-8 strings; json and protobuf formats only */
};

/* Bytes per element; 0 for MLB_DTYPE_STRING and unknown values. */
MLB_API size_t mlb_dtype_size(mlb_dtype dtype) MLB_NOEXCEPT;
/* LLVM's name: "float", "double", "int8_t", ..., "bool", "string"; "invalid"
   for unknown values. Static storage. */
MLB_API const char* mlb_dtype_name(mlb_dtype dtype) MLB_NOEXCEPT;
/* Accepts LLVM names and numpy names ("float32", "int64", ...);
   MLB_DTYPE_INVALID if unknown or NULL. */
MLB_API mlb_dtype mlb_dtype_parse(const char* name) MLB_NOEXCEPT;

/* ==== wire formats ====================================================== */

typedef int32_t mlb_format;
enum {
  MLB_FORMAT_BITSTREAM = 1, /* LLVM MLGO interactive mode, byte for byte (no strings) */
  MLB_FORMAT_JSON = 2,      /* framed JSON with explicit dtypes */
  MLB_FORMAT_PROTOBUF = 3   /* framed mlbridge.v1.Message */
};
/* "bitstream", "json", "protobuf"; "invalid" for other values. Static storage. */
MLB_API const char* mlb_format_name(mlb_format format) MLB_NOEXCEPT;
/* Parses the names above. */
MLB_API mlb_status mlb_format_parse(const char* name, mlb_format* format, mlb_error** error) MLB_NOEXCEPT;

/* ==== logging =========================================================== */

/* The library prints nothing. A hook receives its diagnostics (for example
   ONNX Runtime's messages, or a runner that had to end a stale session). */
typedef int32_t mlb_log_level;
enum { MLB_LOG_DEBUG = 0, MLB_LOG_INFO = 1, MLB_LOG_WARNING = 2, MLB_LOG_ERROR = 3 };
/* `message` is valid during the call only; `user` is passed back unchanged.
   The hook may be called from any thread that uses the library, at the same
   time, so it must be thread-safe. */
typedef void (*mlb_log_fn)(mlb_log_level level, const char* message, void* user);
/* Installs the process-wide hook; NULL removes it. Always MLB_OK. */
MLB_API mlb_status mlb_set_log_hook(mlb_log_fn hook, void* user) MLB_NOEXCEPT;

/* ==== tensor specs ====================================================== */

/* A named, typed, shaped tensor slot (LLVM's TensorSpec). Immutable.
   Runners copy the specs they are created with: destroy yours any time
   after the create call. */
typedef struct mlb_spec mlb_spec;

/* `dims` holds `rank` dimensions (NULL when rank is 0: a scalar). Errors:
   MLB_INVALID_ARGUMENT for an empty name, an unknown dtype, a negative
   dimension or a size that does not fit in memory. */
MLB_API mlb_status mlb_spec_create(const char* name, mlb_dtype dtype, const int64_t* dims, size_t rank,
                                   mlb_spec** spec, mlb_error** error) MLB_NOEXCEPT;
/* LLVM's JSON form, e.g. {"name":"callee_users","type":"int64_t","port":0,"shape":[1]}
   (any key order and white space). `length` may be MLB_NUL_TERMINATED.
   Malformed JSON and invalid specs are errors naming the problem. */
MLB_API mlb_status mlb_spec_from_json(const char* json, size_t length, mlb_spec** spec,
                                      mlb_error** error) MLB_NOEXCEPT;
/* The exact LLVM JSON form; free *json with mlb_string_free. */
MLB_API mlb_status mlb_spec_to_json(const mlb_spec* spec, char** json, mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_spec_clone(const mlb_spec* spec, mlb_spec** copy, mlb_error** error) MLB_NOEXCEPT;
MLB_API void mlb_spec_destroy(mlb_spec* spec) MLB_NOEXCEPT;

/* Accessors (cannot fail; a NULL spec gives NULL / MLB_DTYPE_INVALID / 0).
   Returned pointers live as long as the spec. */
MLB_API const char* mlb_spec_name(const mlb_spec* spec) MLB_NOEXCEPT;
MLB_API mlb_dtype mlb_spec_dtype(const mlb_spec* spec) MLB_NOEXCEPT;
MLB_API size_t mlb_spec_rank(const mlb_spec* spec) MLB_NOEXCEPT;
/* `rank` dimensions; NULL for a scalar. */
MLB_API const int64_t* mlb_spec_dims(const mlb_spec* spec) MLB_NOEXCEPT;
/* Product of the dimensions (1 for a scalar). */
MLB_API size_t mlb_spec_element_count(const mlb_spec* spec) MLB_NOEXCEPT;
/* element count x dtype size; 0 for strings. */
MLB_API size_t mlb_spec_byte_size(const mlb_spec* spec) MLB_NOEXCEPT;
/* 1 if name, dtype, shape and port are equal, else 0. */
MLB_API int mlb_spec_equal(const mlb_spec* a, const mlb_spec* b) MLB_NOEXCEPT;

/* ==== runners =========================================================== */

/* One model session behind one interface. Created by a kind-specific
   constructor (mlb_pipe_runner_create, mlb_onnx_runner_create, ...), used
   through the mlb_runner_* calls below, released by mlb_runner_destroy.
   Constructors take the feature (input) and advice (output) specs as arrays
   of `const mlb_spec*`:
       const mlb_spec* features[] = {users, weights};
   Features are matched by name by the model; extra features are ignored. */
typedef struct mlb_runner mlb_runner;

/* Message of the most recent mlb_runner_* call on r: "" if it succeeded.
   Valid until the next call on r. Never NULL. */
MLB_API const char* mlb_runner_last_error(const mlb_runner* r) MLB_NOEXCEPT;
/* Status of the most recent mlb_runner_* call on r (MLB_INVALID_ARGUMENT for NULL). */
MLB_API mlb_status mlb_runner_last_status(const mlb_runner* r) MLB_NOEXCEPT;
/* "pipe", "onnx", ...; static storage. */
MLB_API mlb_status mlb_runner_kind(mlb_runner* r, const char** kind) MLB_NOEXCEPT;

/* -- specs -- */
MLB_API mlb_status mlb_runner_input_count(mlb_runner* r, size_t* count) MLB_NOEXCEPT;
MLB_API mlb_status mlb_runner_output_count(mlb_runner* r, size_t* count) MLB_NOEXCEPT;
/* Borrowed spec of input / output `index` (rank, dims, dtype through the
   mlb_spec accessors); valid until mlb_runner_destroy. MLB_OUT_OF_RANGE for
   a bad index. */
MLB_API mlb_status mlb_runner_input_spec(mlb_runner* r, size_t index, const mlb_spec** spec) MLB_NOEXCEPT;
MLB_API mlb_status mlb_runner_output_spec(mlb_runner* r, size_t index, const mlb_spec** spec) MLB_NOEXCEPT;
/* Index of the named input / output; MLB_NOT_FOUND if there is none. */
MLB_API mlb_status mlb_runner_input_index(mlb_runner* r, const char* name, size_t* index) MLB_NOEXCEPT;
MLB_API mlb_status mlb_runner_output_index(mlb_runner* r, const char* name, size_t* index) MLB_NOEXCEPT;

/* -- inputs, LLVM style: zero-copy, by index -- */
/* The runner-owned storage of input `index` (dense, row-major, little-endian;
   64-byte aligned) and its size in bytes. Write the features there before
   mlb_runner_evaluate. `dtype` must be the input's dtype: a mismatch is
   MLB_INVALID_ARGUMENT, never a reinterpretation. String inputs have no byte
   view (MLB_INVALID_ARGUMENT): use mlb_runner_set_strings. The pointer stays
   valid until mlb_runner_destroy. `byte_size` may be NULL. */
MLB_API mlb_status mlb_runner_input_data(mlb_runner* r, size_t index, mlb_dtype dtype, void** data,
                                         size_t* byte_size) MLB_NOEXCEPT;

/* -- inputs, by name (copied) -- */
/* Copies `count` elements of type `dtype` from `data` into the input named
   `name`. `count` must equal the input's element count (1 for a scalar
   feature). Another dtype is converted only when the value survives (the
   rules of the C++ setFeature): an integer into an integer input that holds
   it or a floating-point input that represents it exactly, an integer 0 or 1
   into a bool input, a double into a float input (rounded; refused out of
   float's range). Anything else (any floating-point value into an integer
   input, an out-of-range value, a negative value into an unsigned input,
   numbers and strings mixed) is MLB_INVALID_ARGUMENT naming the feature. MLB_NOT_FOUND for an unknown name.
   Bool data is one byte per element and must be 0 or 1. For
   MLB_DTYPE_STRING, `data` is a `const char* const*` array of NUL-terminated
   strings. */
MLB_API mlb_status mlb_runner_set_feature(mlb_runner* r, const char* name, mlb_dtype dtype, const void* data,
                                          size_t count) MLB_NOEXCEPT;
/* String input `name` from `count` strings; `lengths` may be NULL (all
   NUL-terminated) or give each length (MLB_NUL_TERMINATED allowed). */
MLB_API mlb_status mlb_runner_set_strings(mlb_runner* r, const char* name, const char* const* values,
                                          const size_t* lengths, size_t count) MLB_NOEXCEPT;
/* A scalar (one-element) string input. */
MLB_API mlb_status mlb_runner_set_string(mlb_runner* r, const char* name, const char* value,
                                         size_t length) MLB_NOEXCEPT;

/* Typed scalar helpers over mlb_runner_set_feature. */
static inline mlb_status mlb_runner_set_float32(mlb_runner* r, const char* name, float v) {
  return mlb_runner_set_feature(r, name, MLB_DTYPE_FLOAT32, &v, 1);
}
static inline mlb_status mlb_runner_set_float64(mlb_runner* r, const char* name, double v) {
  return mlb_runner_set_feature(r, name, MLB_DTYPE_FLOAT64, &v, 1);
}
static inline mlb_status mlb_runner_set_int8(mlb_runner* r, const char* name, int8_t v) {
  return mlb_runner_set_feature(r, name, MLB_DTYPE_INT8, &v, 1);
}
static inline mlb_status mlb_runner_set_uint8(mlb_runner* r, const char* name, uint8_t v) {
  return mlb_runner_set_feature(r, name, MLB_DTYPE_UINT8, &v, 1);
}
static inline mlb_status mlb_runner_set_int16(mlb_runner* r, const char* name, int16_t v) {
  return mlb_runner_set_feature(r, name, MLB_DTYPE_INT16, &v, 1);
}
static inline mlb_status mlb_runner_set_uint16(mlb_runner* r, const char* name, uint16_t v) {
  return mlb_runner_set_feature(r, name, MLB_DTYPE_UINT16, &v, 1);
}
static inline mlb_status mlb_runner_set_int32(mlb_runner* r, const char* name, int32_t v) {
  return mlb_runner_set_feature(r, name, MLB_DTYPE_INT32, &v, 1);
}
static inline mlb_status mlb_runner_set_uint32(mlb_runner* r, const char* name, uint32_t v) {
  return mlb_runner_set_feature(r, name, MLB_DTYPE_UINT32, &v, 1);
}
static inline mlb_status mlb_runner_set_int64(mlb_runner* r, const char* name, int64_t v) {
  return mlb_runner_set_feature(r, name, MLB_DTYPE_INT64, &v, 1);
}
static inline mlb_status mlb_runner_set_uint64(mlb_runner* r, const char* name, uint64_t v) {
  return mlb_runner_set_feature(r, name, MLB_DTYPE_UINT64, &v, 1);
}
static inline mlb_status mlb_runner_set_bool(mlb_runner* r, const char* name, int v) {
  uint8_t b = v ? 1 : 0;
  return mlb_runner_set_feature(r, name, MLB_DTYPE_BOOL, &b, 1);
}

/* -- evaluation -- */
/* Names the following observations (e.g. the function being compiled). */
MLB_API mlb_status mlb_runner_set_context(mlb_runner* r, const char* name) MLB_NOEXCEPT;
/* Sends the inputs and waits for the outputs (bounded by the runner's
   timeout). On failure the outputs are unavailable until the next successful
   evaluation. Transport errors (MLB_UNAVAILABLE, MLB_DEADLINE_EXCEEDED,
   MLB_DATA_LOSS) break a pipe session: later calls return
   MLB_FAILED_PRECONDITION. MLB_ABORTED (the model refused this request)
   does not. */
MLB_API mlb_status mlb_runner_evaluate(mlb_runner* r) MLB_NOEXCEPT;

/* -- outputs (after a successful mlb_runner_evaluate; still readable after
   mlb_runner_finish) -- */
/* Copies output `index` into `buffer`, which holds exactly `count` elements
   of `dtype`. `dtype` must be the output's dtype and `count` its element
   count: otherwise MLB_INVALID_ARGUMENT, never a reinterpretation.
   MLB_FAILED_PRECONDITION before the first successful evaluation (or after a
   failed one). String outputs: mlb_runner_get_output_string. */
MLB_API mlb_status mlb_runner_get_output(mlb_runner* r, size_t index, mlb_dtype dtype, void* buffer,
                                         size_t count) MLB_NOEXCEPT;
/* The same, by output name (MLB_NOT_FOUND for an unknown name). */
MLB_API mlb_status mlb_runner_get_output_by_name(mlb_runner* r, const char* name, mlb_dtype dtype, void* buffer,
                                                 size_t count) MLB_NOEXCEPT;
/* Zero-copy view of output `index`, valid until the next mlb_runner_evaluate
   or mlb_runner_destroy. Same checks as mlb_runner_get_output. `byte_size`
   may be NULL. */
MLB_API mlb_status mlb_runner_output_data(mlb_runner* r, size_t index, mlb_dtype dtype, const void** data,
                                          size_t* byte_size) MLB_NOEXCEPT;
/* Element `element` of string output `index`: bytes and length (also
   NUL-terminated), valid until the next mlb_runner_evaluate or
   mlb_runner_destroy. */
MLB_API mlb_status mlb_runner_get_output_string(mlb_runner* r, size_t index, size_t element, const char** data,
                                                size_t* length) MLB_NOEXCEPT;

/* -- end -- */
/* Ends the session cleanly (the model sees a clean end) and reports any error
   doing so. Idempotent; later evaluations return MLB_FAILED_PRECONDITION. */
MLB_API mlb_status mlb_runner_finish(mlb_runner* r) MLB_NOEXCEPT;
/* Finishes (ignoring errors: call mlb_runner_finish first to see them) and
   frees the runner and everything borrowed from it. NULL is ignored. */
MLB_API void mlb_runner_destroy(mlb_runner* r) MLB_NOEXCEPT;

/* ==== runner kind "pipe": a model in another process, over named pipes === */

/* Options, created with defaults: format bitstream, timeout 10000 ms,
   connect timeout 10000 ms, FIFOs not created, private folder required,
   replies up to 256 MiB. The base path has no default: set it. */
typedef struct mlb_pipe_options mlb_pipe_options;
MLB_API mlb_status mlb_pipe_options_create(mlb_pipe_options** options, mlb_error** error) MLB_NOEXCEPT;
MLB_API void mlb_pipe_options_destroy(mlb_pipe_options* options) MLB_NOEXCEPT;
/* Channel base path: the FIFOs are BASE.in (model -> compiler) and BASE.out. */
MLB_API mlb_status mlb_pipe_options_set_base(mlb_pipe_options* options, const char* base,
                                             mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_pipe_options_set_format(mlb_pipe_options* options, mlb_format format,
                                               mlb_error** error) MLB_NOEXCEPT;
/* Bound on each request's write and reply (> 0). */
MLB_API mlb_status mlb_pipe_options_set_timeout_ms(mlb_pipe_options* options, int32_t timeout_ms,
                                                   mlb_error** error) MLB_NOEXCEPT;
/* Bound on waiting for the model to open the channel (> 0). */
MLB_API mlb_status mlb_pipe_options_set_connect_timeout_ms(mlb_pipe_options* options, int32_t timeout_ms,
                                                           mlb_error** error) MLB_NOEXCEPT;
/* Non-zero: create the FIFOs (and a 0700 folder) if missing. */
MLB_API mlb_status mlb_pipe_options_set_create_fifos(mlb_pipe_options* options, int enable,
                                                     mlb_error** error) MLB_NOEXCEPT;
/* Non-zero: accept a channel folder other users can access (not recommended:
   they could read the features or forge decisions). */
MLB_API mlb_status mlb_pipe_options_set_allow_shared_folder(mlb_pipe_options* options, int enable,
                                                            mlb_error** error) MLB_NOEXCEPT;
/* Larger replies are refused before allocation (> 0). */
MLB_API mlb_status mlb_pipe_options_set_max_message_bytes(mlb_pipe_options* options, uint64_t max_bytes,
                                                          mlb_error** error) MLB_NOEXCEPT;

/* Opens the channel (bounded by the connect timeout) and sends the session
   header; framed formats also wait for the model to accept the specs
   (MLB_FAILED_PRECONDITION with the model's reason if it refuses). A model
   that never comes is MLB_UNAVAILABLE within the connect timeout. */
MLB_API mlb_status mlb_pipe_runner_create(const mlb_spec* const* features, size_t feature_count,
                                          const mlb_spec* const* advice, size_t advice_count,
                                          const mlb_pipe_options* options, mlb_runner** runner,
                                          mlb_error** error) MLB_NOEXCEPT;

/* Creates a private (0700) folder for channels, `parent`/mlbridge-XXXXXX, or
   under $XDG_RUNTIME_DIR / $TMPDIR / /tmp when `parent` is NULL or "".
   Free *path with mlb_string_free (the folder itself is the caller's). */
MLB_API mlb_status mlb_make_private_channel_dir(const char* parent, char** path, mlb_error** error) MLB_NOEXCEPT;

/* ==== runner kind "shm": a model in another process, over shared memory = */

/* The same as "pipe", through BASE.shm (made by the model, e.g. Python's
   mlbridge.ShmServer) instead of FIFOs: docs/shm.md. Options, created with
   defaults: format bitstream, timeout 10000 ms, connect timeout 10000 ms,
   spin 50 us, private folder required, replies up to 256 MiB. The base
   path has no default: set it. */
typedef struct mlb_shm_options mlb_shm_options;
MLB_API mlb_status mlb_shm_options_create(mlb_shm_options** options, mlb_error** error) MLB_NOEXCEPT;
MLB_API void mlb_shm_options_destroy(mlb_shm_options* options) MLB_NOEXCEPT;
/* Channel base path: the region is BASE.shm. */
MLB_API mlb_status mlb_shm_options_set_base(mlb_shm_options* options, const char* base,
                                            mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_shm_options_set_format(mlb_shm_options* options, mlb_format format,
                                              mlb_error** error) MLB_NOEXCEPT;
/* Bound on each request's write and reply (> 0). */
MLB_API mlb_status mlb_shm_options_set_timeout_ms(mlb_shm_options* options, int32_t timeout_ms,
                                                  mlb_error** error) MLB_NOEXCEPT;
/* Bound on waiting for the model to create the region and accept (> 0). */
MLB_API mlb_status mlb_shm_options_set_connect_timeout_ms(mlb_shm_options* options, int32_t timeout_ms,
                                                          mlb_error** error) MLB_NOEXCEPT;
/* Busy-wait budget per wait before sleeping, 0..1000000 us (0: never spin):
   at most this much CPU per decision. */
MLB_API mlb_status mlb_shm_options_set_spin_us(mlb_shm_options* options, int32_t spin_us,
                                               mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_shm_options_set_allow_shared_folder(mlb_shm_options* options, int enable,
                                                           mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_shm_options_set_max_message_bytes(mlb_shm_options* options, uint64_t max_bytes,
                                                         mlb_error** error) MLB_NOEXCEPT;
/* Maps the region, claims the channel (one compiler at a time) and sends the
   session header, like mlb_pipe_runner_create. */
MLB_API mlb_status mlb_shm_runner_create(const mlb_spec* const* features, size_t feature_count,
                                         const mlb_spec* const* advice, size_t advice_count,
                                         const mlb_shm_options* options, mlb_runner** runner,
                                         mlb_error** error) MLB_NOEXCEPT;

/* ==== runner kind "onnx": the built-in ONNX engine, in process ========== */

/* Available when the library is built with MLBRIDGE_WITH_ENGINE (the
   default); otherwise the load functions return MLB_UNIMPLEMENTED.
   A model is loaded, validated and planned once, then immutable: share it
   between threads and create one runner per thread. Runners keep the model
   alive: destroy your handle any time after creating them. */
typedef struct mlb_onnx_options mlb_onnx_options;
typedef struct mlb_onnx_model mlb_onnx_model;

/* Load options (defaults as mlbridge::OnnxLoadOptions). */
MLB_API mlb_status mlb_onnx_options_create(mlb_onnx_options** options, mlb_error** error) MLB_NOEXCEPT;
MLB_API void mlb_onnx_options_destroy(mlb_onnx_options* options) MLB_NOEXCEPT;
/* Value of the symbolic input dimension named `dim_param` (>= 0). */
MLB_API mlb_status mlb_onnx_options_set_dim_value(mlb_onnx_options* options, const char* dim_param, int64_t value,
                                                  mlb_error** error) MLB_NOEXCEPT;
/* Value of symbolic dimensions not named above (>= 0; default 1). */
MLB_API mlb_status mlb_onnx_options_set_default_dim_value(mlb_onnx_options* options, int64_t value,
                                                          mlb_error** error) MLB_NOEXCEPT;
/* Non-zero: accept opsets newer than the engine knows (unchecked semantics). */
MLB_API mlb_status mlb_onnx_options_set_allow_newer_opsets(mlb_onnx_options* options, int enable,
                                                           mlb_error** error) MLB_NOEXCEPT;
/* Non-zero: baseline x86-64 kernels only (no AVX2 dispatch). */
MLB_API mlb_status mlb_onnx_options_set_portable_kernels(mlb_onnx_options* options, int enable,
                                                         mlb_error** error) MLB_NOEXCEPT;

/* Limits on untrusted models (defaults as mlbridge::OnnxLoadOptions; see
   docs/reliability.md). Over a limit, loading fails fast, before allocating,
   with MLB_RESOURCE_EXHAUSTED (MLB_DEADLINE_EXCEEDED for the time) and a
   message naming the node and the limit. Sizes must be positive. */
/* The model file or buffer (default 2 GiB). */
MLB_API mlb_status mlb_onnx_options_set_max_model_bytes(mlb_onnx_options* options, uint64_t max_bytes,
                                                        mlb_error** error) MLB_NOEXCEPT;
/* Any one tensor: weights, constants, intermediates (default 1 GiB). */
MLB_API mlb_status mlb_onnx_options_set_max_tensor_bytes(mlb_onnx_options* options, uint64_t max_bytes,
                                                         mlb_error** error) MLB_NOEXCEPT;
/* All constants computed while loading together: constant folding,
   ConstantOfShape, Range, ... (default 256 MiB). */
MLB_API mlb_status mlb_onnx_options_set_max_folded_bytes(mlb_onnx_options* options, uint64_t max_bytes,
                                                         mlb_error** error) MLB_NOEXCEPT;
/* Wall time of one load (read, import, folding, planning); 0: no limit
   (default 60000 ms). */
MLB_API mlb_status mlb_onnx_options_set_load_timeout_ms(mlb_onnx_options* options, int64_t timeout_ms,
                                                        mlb_error** error) MLB_NOEXCEPT;
/* Longest chain of dependent nodes (default 10000). */
MLB_API mlb_status mlb_onnx_options_set_max_graph_depth(mlb_onnx_options* options, uint64_t max_depth,
                                                        mlb_error** error) MLB_NOEXCEPT;

/* Loads a .onnx file (`options` may be NULL). Errors name the node:
   MLB_DATA_LOSS for a malformed file, MLB_UNIMPLEMENTED for an unsupported
   operator, MLB_NOT_FOUND for a missing file. */
MLB_API mlb_status mlb_onnx_model_load(const char* path, const mlb_onnx_options* options, mlb_onnx_model** model,
                                       mlb_error** error) MLB_NOEXCEPT;
/* The same from bytes in memory (copied as needed). */
MLB_API mlb_status mlb_onnx_model_load_from_memory(const void* data, size_t size, const mlb_onnx_options* options,
                                                   mlb_onnx_model** model, mlb_error** error) MLB_NOEXCEPT;
MLB_API void mlb_onnx_model_destroy(mlb_onnx_model* model) MLB_NOEXCEPT;
/* The graph's inputs (initializers excluded) and outputs, shapes as bound;
   borrowed specs valid until mlb_onnx_model_destroy. */
MLB_API mlb_status mlb_onnx_model_input_count(const mlb_onnx_model* model, size_t* count,
                                              mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_onnx_model_output_count(const mlb_onnx_model* model, size_t* count,
                                               mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_onnx_model_input_spec(const mlb_onnx_model* model, size_t index, const mlb_spec** spec,
                                             mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_onnx_model_output_spec(const mlb_onnx_model* model, size_t index, const mlb_spec** spec,
                                              mlb_error** error) MLB_NOEXCEPT;
/* A runner evaluating `model` in process. Features are matched to graph
   inputs by name (extra features are ignored), advice to graph outputs by
   name (see mlbridge/onnx_runner.h for the rules). */
MLB_API mlb_status mlb_onnx_runner_create(const mlb_onnx_model* model, const mlb_spec* const* features,
                                          size_t feature_count, const mlb_spec* const* advice, size_t advice_count,
                                          mlb_runner** runner, mlb_error** error) MLB_NOEXCEPT;

/* ==== runner kind "aot": a model compiled ahead of time by mlbridge-aot == */

/* The descriptor a generated model returns from NAME_model() (see
   mlbridge/aot_model.h and docs/aot.md). Matching rules as for "onnx".
   MLB_UNIMPLEMENTED when the library was built without the engine. */
struct mlbridge_aot_model;
MLB_API mlb_status mlb_aot_runner_create(const struct mlbridge_aot_model* model, const mlb_spec* const* features,
                                         size_t feature_count, const mlb_spec* const* advice, size_t advice_count,
                                         mlb_runner** runner, mlb_error** error) MLB_NOEXCEPT;

/* ==== runner kind "tfaot": a TensorFlow SavedModel compiled by XLA ====== */

/* The descriptor NAME_tfaot_model() returns, generated by
   mlbridge_add_tf_aot_model (see mlbridge/tfaot_model.h and docs/tfaot.md).
   Feeds and fetches are named by the signature's keys; matching rules as for
   "onnx". Always built (needs nothing from TensorFlow at run time). */
struct mlbridge_tfaot_model;
MLB_API mlb_status mlb_tfaot_runner_create(const struct mlbridge_tfaot_model* model, const mlb_spec* const* features,
                                           size_t feature_count, const mlb_spec* const* advice, size_t advice_count,
                                           mlb_runner** runner, mlb_error** error) MLB_NOEXCEPT;

/* ==== runner kind "onnxruntime": ONNX Runtime, in process ============= */

/* Defined in the optional library mlbridge::onnxruntime (built when CMake
   finds ONNX Runtime): link it to use this section. Same shape as the
   built-in engine: a model is one immutable ONNX Runtime session, shared by
   threads; one runner per thread. See mlbridge/onnxruntime_runner.h. */
typedef struct mlb_onnxruntime_options mlb_onnxruntime_options;
typedef struct mlb_onnxruntime_model mlb_onnxruntime_model;
typedef int32_t mlb_onnxruntime_optimization;
enum {
  MLB_ONNXRUNTIME_OPTIMIZE_NONE = 0,
  MLB_ONNXRUNTIME_OPTIMIZE_BASIC = 1,
  MLB_ONNXRUNTIME_OPTIMIZE_EXTENDED = 2,
  MLB_ONNXRUNTIME_OPTIMIZE_ALL = 3 /* the default */
};

MLB_API mlb_status mlb_onnxruntime_options_create(mlb_onnxruntime_options** options, mlb_error** error) MLB_NOEXCEPT;
MLB_API void mlb_onnxruntime_options_destroy(mlb_onnxruntime_options* options) MLB_NOEXCEPT;
/* Threads evaluating one call (>= 0; 1, the default, is the calling thread
   only; 0 is ONNX Runtime's default). */
MLB_API mlb_status mlb_onnxruntime_options_set_intra_op_threads(mlb_onnxruntime_options* options, int32_t threads,
                                                                mlb_error** error) MLB_NOEXCEPT;
/* Threads running independent graph branches (>= 0; default 1). */
MLB_API mlb_status mlb_onnxruntime_options_set_inter_op_threads(mlb_onnxruntime_options* options, int32_t threads,
                                                                mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_onnxruntime_options_set_allow_spinning(mlb_onnxruntime_options* options, int enable,
                                                              mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_onnxruntime_options_set_optimization(mlb_onnxruntime_options* options,
                                                            mlb_onnxruntime_optimization level,
                                                            mlb_error** error) MLB_NOEXCEPT;
/* Value of the symbolic dimension `dim_param`, fixed at load (>= 0). */
MLB_API mlb_status mlb_onnxruntime_options_set_dim_value(mlb_onnxruntime_options* options, const char* dim_param,
                                                         int64_t value, mlb_error** error) MLB_NOEXCEPT;
/* ONNX Runtime messages at or above this severity go to the log hook: 0
   verbose ... 4 fatal (default 2, warnings). */
MLB_API mlb_status mlb_onnxruntime_options_set_log_severity(mlb_onnxruntime_options* options, int32_t severity,
                                                            mlb_error** error) MLB_NOEXCEPT;

/* Loads a model (`options` may be NULL); errors keep ONNX Runtime's message. */
MLB_API mlb_status mlb_onnxruntime_model_load(const char* path, const mlb_onnxruntime_options* options,
                                              mlb_onnxruntime_model** model, mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_onnxruntime_model_load_from_memory(const void* data, size_t size,
                                                          const mlb_onnxruntime_options* options,
                                                          mlb_onnxruntime_model** model,
                                                          mlb_error** error) MLB_NOEXCEPT;
MLB_API void mlb_onnxruntime_model_destroy(mlb_onnxruntime_model* model) MLB_NOEXCEPT;
/* The graph's inputs and outputs as declared: a dimension is -1 where
   symbolic, the dtype MLB_DTYPE_INVALID for a type mlbridge cannot carry.
   Borrowed specs valid until mlb_onnxruntime_model_destroy. */
MLB_API mlb_status mlb_onnxruntime_model_input_count(const mlb_onnxruntime_model* model, size_t* count,
                                                     mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_onnxruntime_model_output_count(const mlb_onnxruntime_model* model, size_t* count,
                                                      mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_onnxruntime_model_input_spec(const mlb_onnxruntime_model* model, size_t index,
                                                    const mlb_spec** spec, mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_onnxruntime_model_output_spec(const mlb_onnxruntime_model* model, size_t index,
                                                     const mlb_spec** spec, mlb_error** error) MLB_NOEXCEPT;
/* Version of the ONNX Runtime library in use ("1.31.1"); free with
   mlb_string_free. */
MLB_API mlb_status mlb_onnxruntime_version(char** version, mlb_error** error) MLB_NOEXCEPT;
/* A runner evaluating `model`; specs matched as for the built-in engine.
   Strings are not supported. */
MLB_API mlb_status mlb_onnxruntime_runner_create(const mlb_onnxruntime_model* model,
                                                 const mlb_spec* const* features, size_t feature_count,
                                                 const mlb_spec* const* advice, size_t advice_count,
                                                 mlb_runner** runner, mlb_error** error) MLB_NOEXCEPT;

/* ==== runner kind "grpc": a model served over gRPC ======================= */

/* Defined in the optional library mlbridge::grpc (built when CMake finds gRPC
   C++): link it to use this section. See mlbridge/grpc_runner.h. */
typedef struct mlb_grpc_options mlb_grpc_options;
typedef struct mlb_grpc_channel mlb_grpc_channel;

/* Defaults: deadline 10000 ms per call, UNAVAILABLE retried up to 8 attempts
   within 30 s, no TLS, streaming decisions, replies up to 256 MiB. The
   address has no default: set it. */
MLB_API mlb_status mlb_grpc_options_create(mlb_grpc_options** options, mlb_error** error) MLB_NOEXCEPT;
MLB_API void mlb_grpc_options_destroy(mlb_grpc_options* options) MLB_NOEXCEPT;
/* "host:port" of the model server. */
MLB_API mlb_status mlb_grpc_options_set_address(mlb_grpc_options* options, const char* address,
                                                mlb_error** error) MLB_NOEXCEPT;
/* Deadline of each call attempt (> 0). */
MLB_API mlb_status mlb_grpc_options_set_deadline_ms(mlb_grpc_options* options, int32_t deadline_ms,
                                                    mlb_error** error) MLB_NOEXCEPT;
/* Retries of UNAVAILABLE: at most `max_attempts` attempts (>= 1), pauses
   from `initial_backoff_ms` doubling up to `max_backoff_ms` (jittered), all
   within `total_budget_ms`. */
MLB_API mlb_status mlb_grpc_options_set_retry(mlb_grpc_options* options, int32_t max_attempts,
                                              int32_t initial_backoff_ms, int32_t max_backoff_ms,
                                              int32_t total_budget_ms, mlb_error** error) MLB_NOEXCEPT;
/* TLS: non-zero `enabled`; PEM file paths (NULL or "": none / the system
   roots); a client certificate and key for mutual TLS; the name checked
   against the server certificate (NULL: the address's host). */
MLB_API mlb_status mlb_grpc_options_set_tls(mlb_grpc_options* options, int enabled, const char* root_ca_path,
                                            const char* cert_chain_path, const char* private_key_path,
                                            const char* server_name_override, mlb_error** error) MLB_NOEXCEPT;
/* Sent as "authorization: Bearer TOKEN" on every call (NULL or "": none). */
MLB_API mlb_status mlb_grpc_options_set_token(mlb_grpc_options* options, const char* token,
                                              mlb_error** error) MLB_NOEXCEPT;
/* Free text the server may log. */
MLB_API mlb_status mlb_grpc_options_set_client_name(mlb_grpc_options* options, const char* name,
                                                    mlb_error** error) MLB_NOEXCEPT;
/* Non-zero (the default): decisions travel on one stream per session; zero:
   one unary call each. */
MLB_API mlb_status mlb_grpc_options_set_streaming(mlb_grpc_options* options, int enable,
                                                  mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_grpc_options_set_max_message_bytes(mlb_grpc_options* options, uint64_t max_bytes,
                                                          mlb_error** error) MLB_NOEXCEPT;

/* One connection to a model server, shareable by many runners and threads
   (each runner is its own session on it). Runners keep it alive. */
MLB_API mlb_status mlb_grpc_channel_create(const mlb_grpc_options* options, mlb_grpc_channel** channel,
                                           mlb_error** error) MLB_NOEXCEPT;
MLB_API void mlb_grpc_channel_destroy(mlb_grpc_channel* channel) MLB_NOEXCEPT;
/* Asks the model server process to stop (`reason` may be NULL). */
MLB_API mlb_status mlb_grpc_channel_shutdown_server(mlb_grpc_channel* channel, const char* reason,
                                                   mlb_error** error) MLB_NOEXCEPT;

/* Connects (with the retry policy) and opens a session; a refusal is
   MLB_FAILED_PRECONDITION with the server's reason. A model-side error on a
   request is MLB_ABORTED with the model's message. */
MLB_API mlb_status mlb_grpc_runner_create(const mlb_spec* const* features, size_t feature_count,
                                          const mlb_spec* const* advice, size_t advice_count,
                                          const mlb_grpc_options* options, mlb_runner** runner,
                                          mlb_error** error) MLB_NOEXCEPT;
/* The same on a shared channel. */
MLB_API mlb_status mlb_grpc_runner_create_on_channel(mlb_grpc_channel* channel, const mlb_spec* const* features,
                                                     size_t feature_count, const mlb_spec* const* advice,
                                                     size_t advice_count, mlb_runner** runner,
                                                     mlb_error** error) MLB_NOEXCEPT;

/* ==== further runner kinds ============================================== */
/* Each kind adds, in its own section:
     typedef struct mlb_<kind>_options mlb_<kind>_options;       (if it has options)
     mlb_<kind>_options_create / _destroy / _set_<option>(..., mlb_error** error)
     mlb_status mlb_<kind>_runner_create(<kind arguments>,
                                         const mlb_spec* const* features, size_t feature_count,
                                         const mlb_spec* const* advice, size_t advice_count,
                                         [const mlb_<kind>_options* options,]
                                         mlb_runner** runner, mlb_error** error);
   and returns the shared mlb_runner handle: every mlb_runner_* call works on
   it, and it can be an RL agent. A kind built into the core library but
   configured out returns MLB_UNIMPLEMENTED from its constructors; a kind in
   an optional library is defined by that library. docs/c-api.md, "Adding a
   runner kind", has the recipe. */

/* ==== multi-agent RL episodes (mlbridge/rl_driver.h) ===================== */

/* A driver runs episodes of an environment (the compiler side, as callbacks)
   with a list of agents (a name and any runner each):
     reset(); while (!done()) { a = next_agent(); observe(a, runner[a]);
                                mlb_runner_evaluate(runner[a]); step(a, runner[a]); }
   The first error ends the episode; its message names the agent (name and
   index) and the step (from 0). An episode not done after max_steps
   decisions is MLB_RESOURCE_EXHAUSTED; an agent index out of range from
   next_agent is MLB_OUT_OF_RANGE. A driver, like a runner, is used by one
   thread at a time. */
typedef struct mlb_rl_agents mlb_rl_agents;
typedef struct mlb_rl_options mlb_rl_options;
typedef struct mlb_rl_driver mlb_rl_driver;

/* The environment's callbacks. Set struct_size to sizeof(mlb_rl_environment):
   fields are only ever appended, and the library reads struct_size bytes.
   A callback that fails returns an error code and may set *error to an
   mlb_error_new(...) that the library takes over (its message ends up in the
   episode's error). */
typedef struct mlb_rl_environment {
  size_t struct_size;
  void* user; /* passed to every callback */
  /* Starts an episode. Optional (NULL: nothing to do). */
  mlb_status (*reset)(void* user, mlb_error** error);
  /* Non-zero when the episode is over; asked before every step. Required. */
  int (*done)(void* user);
  /* The index (into the agent list) of the agent that acts now. Optional
     (NULL: always agent 0). */
  mlb_status (*next_agent)(void* user, int32_t* agent, mlb_error** error);
  /* Fills `runner`'s inputs for `agent`'s decision (mlb_runner_input_data,
     mlb_runner_set_feature, ...). Required. */
  mlb_status (*observe)(void* user, int32_t agent, mlb_runner* runner, mlb_error** error);
  /* Applies the decision: reads `runner`'s outputs (mlb_runner_get_output,
     ...). Required. */
  mlb_status (*step)(void* user, int32_t agent, mlb_runner* runner, mlb_error** error);
} mlb_rl_environment;

/* An ordered list of agents. */
MLB_API mlb_status mlb_rl_agents_create(mlb_rl_agents** agents, mlb_error** error) MLB_NOEXCEPT;
MLB_API void mlb_rl_agents_destroy(mlb_rl_agents* agents) MLB_NOEXCEPT;
/* Appends an agent: a name (for errors and statistics), a borrowed runner
   (it must outlive the list), and an optional role `context` (NULL or "").
   Several agents may share one runner. */
MLB_API mlb_status mlb_rl_agents_add(mlb_rl_agents* agents, const char* name, mlb_runner* runner,
                                     const char* context, mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_rl_agents_count(const mlb_rl_agents* agents, size_t* count, mlb_error** error) MLB_NOEXCEPT;
/* Index of the first agent named `name`; MLB_NOT_FOUND if none. */
MLB_API mlb_status mlb_rl_agents_find(const mlb_rl_agents* agents, const char* name, int32_t* index,
                                      mlb_error** error) MLB_NOEXCEPT;

/* When the driver sends contexts (mlb_runner_set_context): an agent's context
   is "EPISODE/ROLE" from the options' context and the agent's, or whichever
   of them is set; an agent with neither gets none. */
typedef int32_t mlb_rl_context_mode;
enum {
  MLB_RL_CONTEXT_NONE = 0,        /* never */
  MLB_RL_CONTEXT_PER_EPISODE = 1, /* once per agent when an episode starts (default) */
  MLB_RL_CONTEXT_PER_DECISION = 2 /* before a decision, when the runner's last context was
                                     another agent's (agents sharing a runner) */
};
/* Episode options: max_steps 1000000, no context, MLB_RL_CONTEXT_PER_EPISODE. */
MLB_API mlb_status mlb_rl_options_create(mlb_rl_options** options, mlb_error** error) MLB_NOEXCEPT;
MLB_API void mlb_rl_options_destroy(mlb_rl_options* options) MLB_NOEXCEPT;
/* Most decisions one episode may take (> 0). */
MLB_API mlb_status mlb_rl_options_set_max_steps(mlb_rl_options* options, int64_t max_steps,
                                                mlb_error** error) MLB_NOEXCEPT;
/* Names the episode (e.g. the function being compiled); NULL or "": none. */
MLB_API mlb_status mlb_rl_options_set_context(mlb_rl_options* options, const char* context,
                                              mlb_error** error) MLB_NOEXCEPT;
MLB_API mlb_status mlb_rl_options_set_context_mode(mlb_rl_options* options, mlb_rl_context_mode mode,
                                                   mlb_error** error) MLB_NOEXCEPT;

MLB_API mlb_status mlb_rl_driver_create(mlb_rl_driver** driver, mlb_error** error) MLB_NOEXCEPT;
MLB_API void mlb_rl_driver_destroy(mlb_rl_driver* driver) MLB_NOEXCEPT;
/* Runs one episode (`options` may be NULL for the defaults). `steps` (may be
   NULL) receives the decisions taken, also on failure. */
MLB_API mlb_status mlb_rl_driver_run_episode(mlb_rl_driver* driver, const mlb_rl_environment* environment,
                                             const mlb_rl_agents* agents, const mlb_rl_options* options,
                                             int64_t* steps, mlb_error** error) MLB_NOEXCEPT;
/* Statistics of the last episode, complete or not: decisions taken (`steps`),
   per agent (`decisions[i]` for agent i, for the first `count` agents; may be
   NULL with count 0), and the agent that failed (-1 when none did, or when
   the environment or the step budget failed). Each out-parameter may be NULL. */
MLB_API mlb_status mlb_rl_driver_last_episode(const mlb_rl_driver* driver, int64_t* steps, int64_t* decisions,
                                              size_t count, int32_t* failed_agent, mlb_error** error) MLB_NOEXCEPT;
/* Episodes started by this driver, failed ones included. */
MLB_API mlb_status mlb_rl_driver_episodes(const mlb_rl_driver* driver, int64_t* episodes,
                                          mlb_error** error) MLB_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLBRIDGE_MLBRIDGE_H */
