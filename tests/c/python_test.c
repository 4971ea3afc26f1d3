/* Real round trips through the pipe runner in all three formats, against the
 * Python model server (python -m mlbridge.testing.bench_model --model echo: the advice
 * is the first feature's values, cast to the advice dtype): every dtype, scalar
 * and array, strings where the format carries them, and a model killed in the
 * middle of a session. */
#include "c_test.h"

#include <stdlib.h>

static const mlb_dtype kNumeric[] = {MLB_DTYPE_FLOAT32, MLB_DTYPE_FLOAT64, MLB_DTYPE_INT8,   MLB_DTYPE_UINT8,
                                     MLB_DTYPE_INT16,   MLB_DTYPE_UINT16,  MLB_DTYPE_INT32,  MLB_DTYPE_UINT32,
                                     MLB_DTYPE_INT64,   MLB_DTYPE_UINT64,  MLB_DTYPE_BOOL};
enum { kNumNumeric = sizeof kNumeric / sizeof kNumeric[0], kLen = 4 };

/* `count` values of `dtype`, including each type's extremes. */
static void fill(mlb_dtype dtype, int seed, void* out, size_t count) {
  size_t k;
  for (k = 0; k < count; ++k) {
    int v = seed * 5 + (int)k;
    switch (dtype) {
      case MLB_DTYPE_FLOAT32: ((float*)out)[k] = k == 0 ? 3.4028235e38f : (float)v * -0.1f; break;
      case MLB_DTYPE_FLOAT64: ((double*)out)[k] = k == 0 ? 1e-300 : (double)v / 3.0; break;
      case MLB_DTYPE_INT8: ((int8_t*)out)[k] = (int8_t)(k == 0 ? -128 : v); break;
      case MLB_DTYPE_UINT8: ((uint8_t*)out)[k] = (uint8_t)(k == 0 ? 255 : v + 10); break;
      case MLB_DTYPE_INT16: ((int16_t*)out)[k] = (int16_t)(k == 0 ? -32768 : -v); break;
      case MLB_DTYPE_UINT16: ((uint16_t*)out)[k] = (uint16_t)(k == 0 ? 65535 : v); break;
      case MLB_DTYPE_INT32: ((int32_t*)out)[k] = k == 0 ? INT32_MIN : -v * 1000; break;
      case MLB_DTYPE_UINT32: ((uint32_t*)out)[k] = k == 0 ? UINT32_MAX : (uint32_t)v; break;
      case MLB_DTYPE_INT64: ((int64_t*)out)[k] = k == 0 ? INT64_MIN : (k == 1 ? INT64_MAX : -(int64_t)v); break;
      case MLB_DTYPE_UINT64: ((uint64_t*)out)[k] = k == 0 ? UINT64_MAX : (uint64_t)v << 33; break;
      case MLB_DTYPE_BOOL: ((uint8_t*)out)[k] = (uint8_t)(v % 2); break;
      default: break;
    }
  }
}

typedef struct {
  char* dir;
  char* base;
  pid_t model;
} server;

static int start_server(server* s) {
  memset(s, 0, sizeof *s);
  if (!mlbt_channel_new(&s->dir, &s->base)) return 0;
  s->model = mlbt_python_model_start(s->base, "echo");
  return s->model > 0;
}

static void stop_server(server* s) {
  mlbt_stop(s->model);
  mlbt_channel_free(s->dir, s->base);
}

static mlb_runner* connect_runner(const server* s, mlb_format format, const mlb_spec* const* features, size_t nf,
                                  const mlb_spec* const* advice, size_t na) {
  mlb_pipe_options* o = NULL;
  mlb_runner* r = NULL;
  mlb_error* err = NULL;
  if (mlb_pipe_options_create(&o, &err) == MLB_OK && mlb_pipe_options_set_base(o, s->base, &err) == MLB_OK &&
      mlb_pipe_options_set_format(o, format, &err) == MLB_OK &&
      mlb_pipe_options_set_timeout_ms(o, 20000, &err) == MLB_OK &&
      mlb_pipe_options_set_connect_timeout_ms(o, 20000, &err) == MLB_OK)
    mlb_pipe_runner_create(features, nf, advice, na, o, &r, &err);
  if (!r) {
    fprintf(stderr, "cannot connect (%s): %s\n", mlb_format_name(format), mlb_error_message(err));
    ++mlbt_failures;
  }
  mlb_error_free(err);
  mlb_pipe_options_destroy(o);
  return r;
}

/* One session per dtype: x (dtype[4], first: echoed), extra (float[2],
   ignored by the model) -> out (dtype[4]); then scalars. */
static void round_trip(mlb_format format) {
  server srv;
  size_t i;
  int64_t len = kLen, two = 2;
  if (!start_server(&srv)) {
    FAIL("the Python model server did not start");
    stop_server(&srv);
    return;
  }
  for (i = 0; i < kNumNumeric; ++i) {
    mlb_dtype t = kNumeric[i];
    mlb_spec* x = mlbt_spec("x", t, &len, 1);
    mlb_spec* extra = mlbt_spec("extra", MLB_DTYPE_FLOAT32, &two, 1);
    mlb_spec* out = mlbt_spec("out", t, &len, 1);
    const mlb_spec* features[2];
    const mlb_spec* advice[1];
    mlb_runner* r;
    int seed;
    features[0] = x;
    features[1] = extra;
    advice[0] = out;
    r = connect_runner(&srv, format, features, 2, advice, 1);
    for (seed = 1; r && seed <= 3; ++seed) {
      unsigned char in[8 * kLen], got[8 * kLen];
      float e[2] = {1.5f, -2.5f};
      fill(t, seed, in, kLen);
      memset(got, 0xCD, sizeof got);
      CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "x", t, in, kLen));
      CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "extra", MLB_DTYPE_FLOAT32, e, 2));
      CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
      CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, t, got, kLen));
      if (memcmp(in, got, kLen * mlb_dtype_size(t)) != 0) {
        fprintf(stderr, "%s: %s round trip differs (seed %d)\n", mlb_format_name(format), mlb_dtype_name(t), seed);
        ++mlbt_failures;
      }
    }
    if (r) CHECK_RUNNER_OK(r, mlb_runner_finish(r));
    mlb_runner_destroy(r);
    mlb_spec_destroy(x);
    mlb_spec_destroy(extra);
    mlb_spec_destroy(out);
  }
  /* Scalars (shape []), with a context. */
  {
    mlb_spec* x = mlbt_spec("x", MLB_DTYPE_INT64, NULL, 0);
    mlb_spec* out = mlbt_spec("decision", MLB_DTYPE_INT64, NULL, 0);
    const mlb_spec* features[1];
    const mlb_spec* advice[1];
    mlb_runner* r;
    int64_t k;
    features[0] = x;
    advice[0] = out;
    r = connect_runner(&srv, format, features, 1, advice, 1);
    if (r) CHECK_RUNNER_OK(r, mlb_runner_set_context(r, "main"));
    for (k = -2; r && k <= 2; ++k) {
      int64_t d = 0;
      CHECK_RUNNER_OK(r, mlb_runner_set_int64(r, "x", k * 1000000007LL));
      CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
      CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, &d, 1));
      CHECK_INT_EQ(k * 1000000007LL, d);
    }
    mlb_runner_destroy(r);
    mlb_spec_destroy(x);
    mlb_spec_destroy(out);
  }
  stop_server(&srv);
}

TEST(round_trip_bitstream) { round_trip(MLB_FORMAT_BITSTREAM); }
TEST(round_trip_json) { round_trip(MLB_FORMAT_JSON); }
TEST(round_trip_protobuf) { round_trip(MLB_FORMAT_PROTOBUF); }

/* String tensors: json and protobuf carry them. */
static void strings(mlb_format format) {
  static const char* values[3] = {"h\xc3\xa9llo", "quote \" backslash \\ newline \n tab \t", ""};
  int64_t three = 3;
  server srv;
  mlb_spec* x = mlbt_spec("names", MLB_DTYPE_STRING, &three, 1);
  mlb_spec* out = mlbt_spec("echo", MLB_DTYPE_STRING, &three, 1);
  const mlb_spec* features[1];
  const mlb_spec* advice[1];
  mlb_runner* r;
  size_t k;
  features[0] = x;
  advice[0] = out;
  if (!start_server(&srv)) {
    FAIL("the Python model server did not start");
    stop_server(&srv);
    return;
  }
  r = connect_runner(&srv, format, features, 1, advice, 1);
  if (r) {
    const char* view = NULL;
    size_t length = 0;
    size_t lengths[3] = {6, MLB_NUL_TERMINATED, 0};
    const char* zero_copy_values[3] = {"a", "b", "c"};
    /* Explicit lengths, MLB_NUL_TERMINATED, empty strings. */
    CHECK_RUNNER_OK(r, mlb_runner_set_strings(r, "names", values, lengths, 3));
    CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
    for (k = 0; k < 3; ++k) {
      CHECK_RUNNER_OK(r, mlb_runner_get_output_string(r, 0, k, &view, &length));
      CHECK_INT_EQ(strlen(values[k]), length);
      CHECK_STR_EQ(values[k], view);
    }
    CHECK_RUNNER(MLB_OUT_OF_RANGE, r, mlb_runner_get_output_string(r, 0, 3, &view, &length));
    /* Strings have no byte view and no numeric reading. */
    CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_output_data(r, 0, MLB_DTYPE_STRING, (const void**)&view, NULL));
    CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_get_output(r, 0, MLB_DTYPE_STRING, &view, 3));
    CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_get_output(r, 0, MLB_DTYPE_UINT8, &view, 3));
    {
      void* p = NULL;
      CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_input_data(r, 0, MLB_DTYPE_STRING, &p, NULL));
    }
    /* The generic setter takes NUL-terminated strings. */
    CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "names", MLB_DTYPE_STRING, zero_copy_values, 3));
    CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
    CHECK_RUNNER_OK(r, mlb_runner_get_output_string(r, 0, 2, &view, &length));
    CHECK_STR_EQ("c", view);
    CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_strings(r, "names", values, NULL, 2));
    CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_set_int32(r, "names", 1));
  }
  mlb_runner_destroy(r);
  mlb_spec_destroy(x);
  mlb_spec_destroy(out);
  stop_server(&srv);
}

TEST(strings_json) { strings(MLB_FORMAT_JSON); }
TEST(strings_protobuf) { strings(MLB_FORMAT_PROTOBUF); }

/* The model process is killed between two decisions: the next evaluation is
   an error within the timeout, never a hang or a crash (no SIGPIPE). */
static void killed(mlb_format format) {
  int64_t one = 1;
  server srv;
  mlb_spec* x = mlbt_spec("x", MLB_DTYPE_INT64, &one, 1);
  const mlb_spec* specs[1];
  mlb_runner* r;
  specs[0] = x;
  if (!start_server(&srv)) {
    FAIL("the Python model server did not start");
    stop_server(&srv);
    return;
  }
  r = connect_runner(&srv, format, specs, 1, specs, 1);
  if (r) {
    int64_t d = 0;
    double start;
    CHECK_RUNNER_OK(r, mlb_runner_set_int64(r, "x", 7));
    CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
    CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, &d, 1));
    CHECK_INT_EQ(7, d);
    mlbt_kill(srv.model); /* returns once the process is gone */
    srv.model = 0;
    start = mlbt_now_ms();
    CHECK_RUNNER(MLB_UNAVAILABLE, r, mlb_runner_evaluate(r));
    CHECK(mlbt_now_ms() - start < 20000);
    CHECK_RUNNER(MLB_FAILED_PRECONDITION, r, mlb_runner_evaluate(r));
    CHECK_RUNNER(MLB_FAILED_PRECONDITION, r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, &d, 1));
  }
  mlb_runner_destroy(r);
  mlb_spec_destroy(x);
  stop_server(&srv);
}

TEST(model_killed_bitstream) { killed(MLB_FORMAT_BITSTREAM); }
TEST(model_killed_json) { killed(MLB_FORMAT_JSON); }
TEST(model_killed_protobuf) { killed(MLB_FORMAT_PROTOBUF); }

int main(int argc, char** argv) {
  static const mlbt_case cases[] = {
      TEST_CASE(round_trip_bitstream),   TEST_CASE(round_trip_json),       TEST_CASE(round_trip_protobuf),
      TEST_CASE(strings_json),           TEST_CASE(strings_protobuf),      TEST_CASE(model_killed_bitstream),
      TEST_CASE(model_killed_json),      TEST_CASE(model_killed_protobuf),
  };
  return RUN_TESTS(argc, argv, cases);
}
