/* The runner handle over the pipe runner, against a fake bitstream model in a
 * forked process: every dtype set and read back (scalar and array, copied and
 * zero-copy), wrong dtypes, unknown names, counts and indexes, session states,
 * and the failure paths (model never starts, killed, hangs up, silent, too
 * long a reply, shared folder). */
#include "c_test.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a session: channel folder + fake model + runner ---------------------- */

typedef struct {
  char* dir;
  char* base;
  pid_t model;
  mlb_runner* runner;
} session;

static size_t total_bytes(const mlb_spec* const* specs, size_t n) {
  size_t i, sum = 0;
  for (i = 0; i < n; ++i) sum += mlb_spec_byte_size(specs[i]);
  return sum;
}

static mlb_pipe_options* make_options(const char* base, int timeout_ms, int connect_timeout_ms) {
  mlb_pipe_options* o = NULL;
  if (mlb_pipe_options_create(&o, NULL) != MLB_OK) return NULL;
  if (mlb_pipe_options_set_base(o, base, NULL) != MLB_OK ||
      mlb_pipe_options_set_format(o, MLB_FORMAT_BITSTREAM, NULL) != MLB_OK ||
      mlb_pipe_options_set_timeout_ms(o, timeout_ms, NULL) != MLB_OK ||
      mlb_pipe_options_set_connect_timeout_ms(o, connect_timeout_ms, NULL) != MLB_OK) {
    mlb_pipe_options_destroy(o);
    return NULL;
  }
  return o;
}

/* Channel, FIFOs, a fake model in `mode`, and a connected runner. */
static int open_session(session* s, const mlb_spec* const* features, size_t nf, const mlb_spec* const* advice,
                        size_t na, mlbt_fake_mode mode, int timeout_ms) {
  mlb_pipe_options* o;
  mlb_error* err = NULL;
  mlb_status st;
  memset(s, 0, sizeof *s);
  if (!mlbt_channel_new(&s->dir, &s->base) || !mlbt_make_fifos(s->base)) return 0;
  s->model = mlbt_fake_model_start(s->base, mode, total_bytes(features, nf), total_bytes(advice, na));
  if (s->model <= 0) return 0;
  o = make_options(s->base, timeout_ms, 10000);
  if (!o) return 0;
  st = mlb_pipe_runner_create(features, nf, advice, na, o, &s->runner, &err);
  mlb_pipe_options_destroy(o);
  if (st != MLB_OK) {
    fprintf(stderr, "mlb_pipe_runner_create: %s: %s\n", mlb_status_name(st), mlb_error_message(err));
    mlb_error_free(err);
    return 0;
  }
  return 1;
}

static void close_session(session* s) {
  mlb_runner_destroy(s->runner); /* the model sees the end of the session ... */
  mlbt_kill(s->model);           /* ... and is reaped either way */
  mlbt_channel_free(s->dir, s->base);
  memset(s, 0, sizeof *s);
}

/* ---- every dtype ------------------------------------------------------------ */

static const mlb_dtype kNumeric[] = {MLB_DTYPE_FLOAT32, MLB_DTYPE_FLOAT64, MLB_DTYPE_INT8,   MLB_DTYPE_UINT8,
                                     MLB_DTYPE_INT16,   MLB_DTYPE_UINT16,  MLB_DTYPE_INT32,  MLB_DTYPE_UINT32,
                                     MLB_DTYPE_INT64,   MLB_DTYPE_UINT64,  MLB_DTYPE_BOOL};
enum { kNumNumeric = sizeof kNumeric / sizeof kNumeric[0], kLen = 3, kMaxBytes = 8 * kLen };

/* `count` distinct values of `dtype` (depending on `seed`), at the type's edges. */
static void fill(mlb_dtype dtype, int seed, void* out, size_t count) {
  size_t k;
  for (k = 0; k < count; ++k) {
    int v = seed * 7 + (int)k;
    switch (dtype) {
      case MLB_DTYPE_FLOAT32: ((float*)out)[k] = (k % 2 ? -1.0f : 1.0f) * ((float)v + 0.25f); break;
      case MLB_DTYPE_FLOAT64: ((double*)out)[k] = (k % 2 ? -1.0 : 1.0) * ((double)v + 1e-9); break;
      case MLB_DTYPE_INT8: ((int8_t*)out)[k] = (int8_t)(k == 0 ? -128 : v - 60); break;
      case MLB_DTYPE_UINT8: ((uint8_t*)out)[k] = (uint8_t)(k == 0 ? 255 : v + 10); break; /* 10 is '\n' */
      case MLB_DTYPE_INT16: ((int16_t*)out)[k] = (int16_t)(k == 0 ? -32768 : v * 300 - 1000); break;
      case MLB_DTYPE_UINT16: ((uint16_t*)out)[k] = (uint16_t)(k == 0 ? 65535 : v * 300); break;
      case MLB_DTYPE_INT32: ((int32_t*)out)[k] = k == 0 ? INT32_MIN : v * 100000 - 7; break;
      case MLB_DTYPE_UINT32: ((uint32_t*)out)[k] = k == 0 ? UINT32_MAX : (uint32_t)v * 100000u; break;
      case MLB_DTYPE_INT64: ((int64_t*)out)[k] = k == 0 ? INT64_MIN : (int64_t)v * 10000000000LL - 3; break;
      case MLB_DTYPE_UINT64: ((uint64_t*)out)[k] = k == 0 ? UINT64_MAX : (uint64_t)v << 40; break;
      case MLB_DTYPE_BOOL: ((uint8_t*)out)[k] = (uint8_t)((v + 1) % 2); break;
      default: break;
    }
  }
}

/* Sets scalar feature `name` of `dtype` from fill(dtype, seed) with the typed helper. */
static mlb_status set_scalar(mlb_runner* r, const char* name, mlb_dtype dtype, int seed) {
  unsigned char v[8];
  fill(dtype, seed, v, 1);
  switch (dtype) {
    case MLB_DTYPE_FLOAT32: { float x; memcpy(&x, v, sizeof x); return mlb_runner_set_float32(r, name, x); }
    case MLB_DTYPE_FLOAT64: { double x; memcpy(&x, v, sizeof x); return mlb_runner_set_float64(r, name, x); }
    case MLB_DTYPE_INT8: { int8_t x; memcpy(&x, v, sizeof x); return mlb_runner_set_int8(r, name, x); }
    case MLB_DTYPE_UINT8: return mlb_runner_set_uint8(r, name, v[0]);
    case MLB_DTYPE_INT16: { int16_t x; memcpy(&x, v, sizeof x); return mlb_runner_set_int16(r, name, x); }
    case MLB_DTYPE_UINT16: { uint16_t x; memcpy(&x, v, sizeof x); return mlb_runner_set_uint16(r, name, x); }
    case MLB_DTYPE_INT32: { int32_t x; memcpy(&x, v, sizeof x); return mlb_runner_set_int32(r, name, x); }
    case MLB_DTYPE_UINT32: { uint32_t x; memcpy(&x, v, sizeof x); return mlb_runner_set_uint32(r, name, x); }
    case MLB_DTYPE_INT64: { int64_t x; memcpy(&x, v, sizeof x); return mlb_runner_set_int64(r, name, x); }
    case MLB_DTYPE_UINT64: { uint64_t x; memcpy(&x, v, sizeof x); return mlb_runner_set_uint64(r, name, x); }
    case MLB_DTYPE_BOOL: return mlb_runner_set_bool(r, name, v[0]);
    default: return MLB_INTERNAL;
  }
}

/* Features a_<dtype>[3] and s_<dtype>[] for every numeric dtype; the advice
   is the same list named out_*: the echo model sends the features back. */
typedef struct {
  mlb_spec* specs[4 * kNumNumeric];
  const mlb_spec* features[2 * kNumNumeric];
  const mlb_spec* advice[2 * kNumNumeric];
  char names[4 * kNumNumeric][32];
} all_dtypes;

static int make_all_dtypes(all_dtypes* d) {
  int64_t len = kLen;
  size_t i;
  memset(d, 0, sizeof *d);
  for (i = 0; i < kNumNumeric; ++i) {
    const char* t = mlb_dtype_name(kNumeric[i]);
    snprintf(d->names[4 * i + 0], 32, "a_%s", t);
    snprintf(d->names[4 * i + 1], 32, "s_%s", t);
    snprintf(d->names[4 * i + 2], 32, "out_a_%s", t);
    snprintf(d->names[4 * i + 3], 32, "out_s_%s", t);
    d->specs[4 * i + 0] = mlbt_spec(d->names[4 * i + 0], kNumeric[i], &len, 1);
    d->specs[4 * i + 1] = mlbt_spec(d->names[4 * i + 1], kNumeric[i], NULL, 0);
    d->specs[4 * i + 2] = mlbt_spec(d->names[4 * i + 2], kNumeric[i], &len, 1);
    d->specs[4 * i + 3] = mlbt_spec(d->names[4 * i + 3], kNumeric[i], NULL, 0);
    d->features[2 * i] = d->specs[4 * i];
    d->features[2 * i + 1] = d->specs[4 * i + 1];
    d->advice[2 * i] = d->specs[4 * i + 2];
    d->advice[2 * i + 1] = d->specs[4 * i + 3];
    if (!d->specs[4 * i] || !d->specs[4 * i + 1] || !d->specs[4 * i + 2] || !d->specs[4 * i + 3]) return 0;
  }
  return 1;
}

static void free_all_dtypes(all_dtypes* d) {
  size_t i;
  for (i = 0; i < 4 * kNumNumeric; ++i) mlb_spec_destroy(d->specs[i]);
}

/* Reads every output back (copy, by name, zero-copy) and compares with fill(seed). */
static void check_echo(mlb_runner* r, int seed) {
  size_t i;
  for (i = 0; i < kNumNumeric; ++i) {
    mlb_dtype t = kNumeric[i];
    size_t sz = mlb_dtype_size(t), bytes = 0;
    unsigned char expected[kMaxBytes], got[kMaxBytes], scalar[8], scalar_got[8];
    const void* view = NULL;
    char name[32];
    fill(t, seed, expected, kLen);
    fill(t, seed, scalar, 1);
    memset(got, 0xAB, sizeof got);
    CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 2 * i, t, got, kLen));
    CHECK(memcmp(expected, got, kLen * sz) == 0);
    CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 2 * i + 1, t, scalar_got, 1));
    CHECK(memcmp(scalar, scalar_got, sz) == 0);
    snprintf(name, sizeof name, "out_a_%s", mlb_dtype_name(t));
    memset(got, 0, sizeof got);
    CHECK_RUNNER_OK(r, mlb_runner_get_output_by_name(r, name, t, got, kLen));
    CHECK(memcmp(expected, got, kLen * sz) == 0);
    CHECK_RUNNER_OK(r, mlb_runner_output_data(r, 2 * i, t, &view, &bytes));
    CHECK_INT_EQ(kLen * sz, bytes);
    CHECK(view != NULL && memcmp(view, expected, bytes) == 0);
    if (mlbt_failures) fprintf(stderr, "  (dtype %s, seed %d)\n", mlb_dtype_name(t), seed);
  }
}

TEST(every_dtype_round_trip) {
  all_dtypes d;
  session s;
  size_t i;
  REQUIRE(make_all_dtypes(&d));
  REQUIRE(open_session(&s, d.features, 2 * kNumNumeric, d.advice, 2 * kNumNumeric, MLBT_ECHO, 10000));

  /* By name: arrays with mlb_runner_set_feature, scalars with the typed helpers. */
  for (i = 0; i < kNumNumeric; ++i) {
    unsigned char buf[kMaxBytes];
    fill(kNumeric[i], 1, buf, kLen);
    CHECK_RUNNER_OK(s.runner, mlb_runner_set_feature(s.runner, d.names[4 * i], kNumeric[i], buf, kLen));
    CHECK_RUNNER_OK(s.runner, set_scalar(s.runner, d.names[4 * i + 1], kNumeric[i], 1));
  }
  CHECK_RUNNER_OK(s.runner, mlb_runner_evaluate(s.runner));
  check_echo(s.runner, 1);

  /* LLVM style: written in place through the zero-copy input views. */
  for (i = 0; i < kNumNumeric; ++i) {
    void* p = NULL;
    size_t bytes = 0;
    CHECK_RUNNER_OK(s.runner, mlb_runner_input_data(s.runner, 2 * i, kNumeric[i], &p, &bytes));
    CHECK_INT_EQ(kLen * mlb_dtype_size(kNumeric[i]), bytes);
    CHECK(p != NULL && ((uintptr_t)p % 64) == 0);
    if (p) fill(kNumeric[i], 2, p, kLen);
    CHECK_RUNNER_OK(s.runner, mlb_runner_input_data(s.runner, 2 * i + 1, kNumeric[i], &p, NULL));
    if (p) fill(kNumeric[i], 2, p, 1);
  }
  CHECK_RUNNER_OK(s.runner, mlb_runner_set_context(s.runner, "function_2"));
  CHECK_RUNNER_OK(s.runner, mlb_runner_evaluate(s.runner));
  check_echo(s.runner, 2);
  CHECK_RUNNER_OK(s.runner, mlb_runner_finish(s.runner));
  close_session(&s);
  free_all_dtypes(&d);
}

/* ---- a small session for the error cases ------------------------------------ */

/* Features: i32 int32[2], f64 double[], u8 uint8_t[], flag bool[], f32 float[];
   advice: decision int64_t[1], probs float[2]. */
typedef struct {
  mlb_spec* specs[7];
  session s;
} small;

static int open_small(small* m, mlbt_fake_mode mode, int timeout_ms) {
  int64_t two = 2, one = 1;
  const mlb_spec* features[5];
  const mlb_spec* advice[2];
  memset(m, 0, sizeof *m);
  m->specs[0] = mlbt_spec("i32", MLB_DTYPE_INT32, &two, 1);
  m->specs[1] = mlbt_spec("f64", MLB_DTYPE_FLOAT64, NULL, 0);
  m->specs[2] = mlbt_spec("u8", MLB_DTYPE_UINT8, NULL, 0);
  m->specs[3] = mlbt_spec("flag", MLB_DTYPE_BOOL, NULL, 0);
  m->specs[4] = mlbt_spec("f32", MLB_DTYPE_FLOAT32, NULL, 0);
  m->specs[5] = mlbt_spec("decision", MLB_DTYPE_INT64, &one, 1);
  m->specs[6] = mlbt_spec("probs", MLB_DTYPE_FLOAT32, &two, 1);
  memcpy(features, m->specs, sizeof features);
  memcpy(advice, m->specs + 5, sizeof advice);
  return open_session(&m->s, features, 5, advice, 2, mode, timeout_ms);
}

static void close_small(small* m) {
  size_t i;
  close_session(&m->s);
  for (i = 0; i < 7; ++i) mlb_spec_destroy(m->specs[i]);
}

TEST(wrong_dtype_errors) {
  small m;
  mlb_runner* r;
  int32_t i32[2] = {1, 2};
  int64_t i64[2] = {5, -7};
  double frac[2] = {1.5, 2.0};
  double whole[2] = {3.0, 4.0};
  int8_t neg = -1;
  int16_t big = 300;
  uint8_t two = 2;
  float f = 0.5f;
  void* p = NULL;
  const char* strs[1] = {"x"};
  int64_t decision = 99;
  float probs[2] = {9.0f, 9.0f};
  REQUIRE(open_small(&m, MLBT_ECHO, 10000));
  r = m.s.runner;

  /* Exact conversions are accepted (as the C++ setFeature does). */
  CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "i32", MLB_DTYPE_INT32, i32, 2));
  CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "i32", MLB_DTYPE_INT64, i64, 2));
  CHECK_RUNNER_OK(r, mlb_runner_set_int32(r, "f64", 7));
  CHECK_RUNNER_OK(r, mlb_runner_set_float64(r, "f32", 0.5));
  CHECK_RUNNER_OK(r, mlb_runner_set_int8(r, "flag", 1));
  /* Anything that could change the value is refused, naming the feature:
     floating point into an integer (even 3.0), out of range, negative into
     unsigned, not 0/1 into bool, numbers and strings mixed. */
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_feature(r, "i32", MLB_DTYPE_FLOAT64, frac, 2));
  CHECK_CONTAINS(mlb_runner_last_error(r), "i32");
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_feature(r, "i32", MLB_DTYPE_FLOAT64, whole, 2));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_feature(r, "u8", MLB_DTYPE_INT8, &neg, 1));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_feature(r, "u8", MLB_DTYPE_INT16, &big, 1));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_feature(r, "flag", MLB_DTYPE_UINT8, &two, 1));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_feature(r, "flag", MLB_DTYPE_BOOL, &two, 1));
  CHECK_CONTAINS(mlb_runner_last_error(r), "not 0 or 1");
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_float64(r, "f32", 1e300));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_feature(r, "f32", MLB_DTYPE_STRING, strs, 1));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_string(r, "f32", "x", MLB_NUL_TERMINATED));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_feature(r, "f32", 99, &f, 1));
  CHECK_CONTAINS(mlb_runner_last_error(r), "99");
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_feature(r, "f32", MLB_DTYPE_FLOAT32, NULL, 1));
  /* The zero-copy view demands the input's own dtype. */
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_input_data(r, 0, MLB_DTYPE_UINT32, &p, NULL));
  CHECK_CONTAINS(mlb_runner_last_error(r), "int32_t");
  CHECK(p == NULL);
  /* A successful call clears the message. */
  CHECK_RUNNER_OK(r, mlb_runner_input_data(r, 0, MLB_DTYPE_INT32, &p, NULL));
  CHECK_STR_EQ("", mlb_runner_last_error(r));
  CHECK_INT_EQ(MLB_OK, mlb_runner_last_status(r));

  CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
  /* Reading an output as another dtype is an error and leaves the buffer alone. */
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_get_output(r, 1, MLB_DTYPE_INT32, probs, 2));
  CHECK_CONTAINS(mlb_runner_last_error(r), "probs");
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_runner_last_status(r));
  CHECK(probs[0] == 9.0f && probs[1] == 9.0f);
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_get_output(r, 0, MLB_DTYPE_UINT64, &decision, 1));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_get_output(r, 0, MLB_DTYPE_FLOAT64, &decision, 1));
  CHECK_INT_EQ(99, decision);
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_get_output_string(r, 0, 0, strs, NULL));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_output_data(r, 1, MLB_DTYPE_FLOAT64, (const void**)&p, NULL));
  /* The right dtype: the echo of i32 = {5, -7} (int32) is the int64 decision's bytes. */
  CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, &decision, 1));
  CHECK_INT_EQ((int64_t)(((uint64_t)(uint32_t)-7 << 32) | 5u), decision);
  close_small(&m);
}

TEST(unknown_names_counts_and_indexes) {
  small m;
  mlb_runner* r;
  size_t n = 0, idx = 0;
  const mlb_spec* spec = NULL;
  void* vp = NULL;
  const char* kind = NULL;
  int32_t three[3] = {1, 2, 3};
  int64_t decision[2];
  float probs[2];
  REQUIRE(open_small(&m, MLBT_ECHO, 10000));
  r = m.s.runner;

  CHECK_RUNNER_OK(r, mlb_runner_kind(r, &kind));
  CHECK_STR_EQ("pipe", kind);
  CHECK_RUNNER_OK(r, mlb_runner_input_count(r, &n));
  CHECK_INT_EQ(5, n);
  CHECK_RUNNER_OK(r, mlb_runner_output_count(r, &n));
  CHECK_INT_EQ(2, n);
  CHECK_RUNNER_OK(r, mlb_runner_output_spec(r, 1, &spec));
  CHECK_STR_EQ("probs", mlb_spec_name(spec));
  CHECK_INT_EQ(MLB_DTYPE_FLOAT32, mlb_spec_dtype(spec));
  CHECK_INT_EQ(1, mlb_spec_rank(spec));
  CHECK_INT_EQ(2, mlb_spec_dims(spec)[0]);
  CHECK_RUNNER_OK(r, mlb_runner_input_spec(r, 1, &spec));
  CHECK_STR_EQ("f64", mlb_spec_name(spec));
  CHECK_INT_EQ(0, mlb_spec_rank(spec));
  CHECK_RUNNER_OK(r, mlb_runner_input_index(r, "flag", &idx));
  CHECK_INT_EQ(3, idx);
  CHECK_RUNNER_OK(r, mlb_runner_output_index(r, "probs", &idx));
  CHECK_INT_EQ(1, idx);

  /* Unknown names. */
  CHECK_RUNNER(MLB_NOT_FOUND, r, mlb_runner_set_int32(r, "no_such_feature", 1));
  CHECK_CONTAINS(mlb_runner_last_error(r), "no_such_feature");
  CHECK_RUNNER(MLB_NOT_FOUND, r, mlb_runner_set_string(r, "nope", "x", 1));
  CHECK_RUNNER(MLB_NOT_FOUND, r, mlb_runner_input_index(r, "decision", &idx)); /* an output, not an input */
  CHECK_RUNNER(MLB_NOT_FOUND, r, mlb_runner_output_index(r, "i32", &idx));
  CHECK_RUNNER(MLB_NOT_FOUND, r, mlb_runner_get_output_by_name(r, "nope", MLB_DTYPE_FLOAT32, probs, 2));
  CHECK_CONTAINS(mlb_runner_last_error(r), "nope");
  /* Counts. */
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_feature(r, "i32", MLB_DTYPE_INT32, three, 3));
  CHECK_CONTAINS(mlb_runner_last_error(r), "2 elements");
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_feature(r, "i32", MLB_DTYPE_INT32, three, 1));
  /* Indexes. */
  CHECK_RUNNER(MLB_OUT_OF_RANGE, r, mlb_runner_input_spec(r, 5, &spec));
  CHECK_RUNNER(MLB_OUT_OF_RANGE, r, mlb_runner_output_spec(r, 2, &spec));
  CHECK_RUNNER(MLB_OUT_OF_RANGE, r, mlb_runner_input_data(r, 9, MLB_DTYPE_INT32, &vp, NULL));
  CHECK_RUNNER(MLB_OUT_OF_RANGE, r, mlb_runner_get_output(r, 2, MLB_DTYPE_FLOAT32, probs, 2));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_input_count(r, NULL));

  CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "i32", MLB_DTYPE_INT32, three, 2));
  CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, decision, 2));
  CHECK_CONTAINS(mlb_runner_last_error(r), "1 elements");
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_get_output(r, 1, MLB_DTYPE_FLOAT32, probs, 1));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_get_output(r, 1, MLB_DTYPE_FLOAT32, NULL, 2));
  CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 1, MLB_DTYPE_FLOAT32, probs, 2));
  close_small(&m);
}

TEST(session_states) {
  small m;
  mlb_runner* r;
  int64_t decision = 0;
  const void* view = NULL;
  REQUIRE(open_small(&m, MLBT_ECHO, 10000));
  r = m.s.runner;
  /* No outputs before the first evaluation. */
  CHECK_RUNNER(MLB_FAILED_PRECONDITION, r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, &decision, 1));
  CHECK_CONTAINS(mlb_runner_last_error(r), "evaluate");
  CHECK_RUNNER(MLB_FAILED_PRECONDITION, r, mlb_runner_output_data(r, 0, MLB_DTYPE_INT64, &view, NULL));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_context(r, NULL));
  CHECK_RUNNER_OK(r, mlb_runner_set_context(r, ""));
  CHECK_RUNNER_OK(r, mlb_runner_set_int32(r, "u8", 42));
  CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
  CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
  CHECK_RUNNER_OK(r, mlb_runner_finish(r));
  CHECK_RUNNER_OK(r, mlb_runner_finish(r)); /* idempotent */
  /* The last outputs stay readable; the session is over. */
  CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, &decision, 1));
  CHECK_RUNNER(MLB_FAILED_PRECONDITION, r, mlb_runner_evaluate(r));
  CHECK_CONTAINS(mlb_runner_last_error(r), "ended");
  CHECK_RUNNER(MLB_FAILED_PRECONDITION, r, mlb_runner_set_context(r, "f"));
  /* A failed evaluation makes the outputs unavailable. */
  CHECK_RUNNER(MLB_FAILED_PRECONDITION, r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, &decision, 1));
  close_small(&m);
}

/* ---- failure paths ------------------------------------------------------------ */

static void expect_create_fails(const char* base, int create_fifos, mlb_status code, const char* in_message) {
  int64_t one = 1;
  mlb_spec* f = mlbt_spec("x", MLB_DTYPE_INT64, &one, 1);
  mlb_spec* a = mlbt_spec("y", MLB_DTYPE_INT64, &one, 1);
  const mlb_spec* features[1];
  const mlb_spec* advice[1];
  mlb_pipe_options* o = make_options(base, 1000, 300);
  mlb_runner* r = NULL;
  mlb_error* err = NULL;
  double start, elapsed;
  features[0] = f;
  advice[0] = a;
  CHECK(f && a && o);
  if (!f || !a || !o) return;
  CHECK_INT_EQ(MLB_OK, mlb_pipe_options_set_create_fifos(o, create_fifos, NULL));
  start = mlbt_now_ms();
  CHECK_ERR_CALL(code, mlb_pipe_runner_create(features, 1, advice, 1, o, &r, &err), err);
  elapsed = mlbt_now_ms() - start;
  CHECK(r == NULL);
  CHECK_CONTAINS(mlb_error_message(err), in_message);
  /* Within the connect timeout (300 ms), with slack for a loaded machine. */
  CHECK(elapsed < 300 + 5000);
  mlb_error_free(err);
  mlb_pipe_options_destroy(o);
  mlb_spec_destroy(f);
  mlb_spec_destroy(a);
}

TEST(model_never_starts) {
  char* dir = NULL;
  char* base = NULL;
  REQUIRE(mlbt_channel_new(&dir, &base));
  /* No FIFOs at all. */
  expect_create_fails(base, 0, MLB_UNAVAILABLE, "did not appear");
  /* FIFOs (created by the runner) but nobody reading them. */
  expect_create_fails(base, 1, MLB_UNAVAILABLE, "is the model running");
  mlbt_channel_free(dir, base);
}

TEST(model_killed_mid_session) {
  small m;
  mlb_runner* r;
  int64_t decision = 0;
  double start;
  REQUIRE(open_small(&m, MLBT_ECHO, 2000));
  r = m.s.runner;
  CHECK_RUNNER_OK(r, mlb_runner_set_int32(r, "u8", 1));
  CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
  CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, &decision, 1));
  mlbt_kill(m.s.model); /* returns once the process is gone */
  m.s.model = 0;
  start = mlbt_now_ms();
  CHECK_RUNNER(MLB_UNAVAILABLE, r, mlb_runner_evaluate(r));
  CHECK(mlbt_now_ms() - start < 2000 + 5000);
  /* The session is broken: later calls say so, with the first error. */
  CHECK_RUNNER(MLB_FAILED_PRECONDITION, r, mlb_runner_evaluate(r));
  CHECK_CONTAINS(mlb_runner_last_error(r), "UNAVAILABLE");
  CHECK_RUNNER(MLB_FAILED_PRECONDITION, r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, &decision, 1));
  close_small(&m);
}

TEST(model_hangs_up) {
  small m;
  REQUIRE(open_small(&m, MLBT_HANGUP, 5000));
  CHECK_RUNNER(MLB_UNAVAILABLE, m.s.runner, mlb_runner_evaluate(m.s.runner));
  close_small(&m);
}

TEST(model_never_replies) {
  small m;
  double start;
  REQUIRE(open_small(&m, MLBT_SILENT, 300));
  start = mlbt_now_ms();
  CHECK_RUNNER(MLB_DEADLINE_EXCEEDED, m.s.runner, mlb_runner_evaluate(m.s.runner));
  /* Only a generous upper bound: DEADLINE_EXCEEDED is the timeout's own
     status, and a lower bound on a wait is a race on a loaded machine. */
  CHECK(mlbt_now_ms() - start < 300 + 5000);
  close_small(&m);
}

TEST(reply_too_long) {
  small m;
  REQUIRE(open_small(&m, MLBT_LONG, 5000));
  CHECK_RUNNER(MLB_DATA_LOSS, m.s.runner, mlb_runner_evaluate(m.s.runner));
  close_small(&m);
}

TEST(shared_folder) {
  int64_t one = 1;
  mlb_spec* f = mlbt_spec("x", MLB_DTYPE_INT64, &one, 1);
  const mlb_spec* specs[1];
  char* dir = NULL;
  char* base = NULL;
  pid_t model;
  mlb_pipe_options* o;
  mlb_runner* r = NULL;
  mlb_error* err = NULL;
  int64_t x = 0x0A0A0A0A0A0A0A0ALL, y = 0;
  specs[0] = f;
  REQUIRE(f && mlbt_channel_new(&dir, &base) && mlbt_make_fifos(base));
  REQUIRE(chmod(dir, 0755) == 0);
  model = mlbt_fake_model_start(base, MLBT_ECHO, 8, 8);
  o = make_options(base, 5000, 5000);
  REQUIRE(o && model > 0);
  CHECK_ERR_CALL(MLB_PERMISSION_DENIED, mlb_pipe_runner_create(specs, 1, specs, 1, o, &r, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "not private");
  CHECK_INT_EQ(MLB_OK, mlb_pipe_options_set_allow_shared_folder(o, 1, NULL));
  CHECK_ERR_CALL(MLB_OK, mlb_pipe_runner_create(specs, 1, specs, 1, o, &r, &err), err);
  if (r) {
    CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "x", MLB_DTYPE_INT64, &x, 1));
    CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
    CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, &y, 1));
    CHECK(x == y);
  }
  mlb_runner_destroy(r);
  mlb_error_free(err);
  mlb_pipe_options_destroy(o);
  mlbt_kill(model);
  mlbt_channel_free(dir, base);
  mlb_spec_destroy(f);
}

int main(int argc, char** argv) {
  static const mlbt_case cases[] = {
      TEST_CASE(every_dtype_round_trip),
      TEST_CASE(wrong_dtype_errors),
      TEST_CASE(unknown_names_counts_and_indexes),
      TEST_CASE(session_states),
      TEST_CASE(model_never_starts),
      TEST_CASE(model_killed_mid_session),
      TEST_CASE(model_hangs_up),
      TEST_CASE(model_never_replies),
      TEST_CASE(reply_too_long),
      TEST_CASE(shared_folder),
  };
  return RUN_TESTS(argc, argv, cases);
}
