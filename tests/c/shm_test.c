/* The runner kind "shm" through the C API, against the Python model server
 * on the shared-memory channel (python -m mlbridge.testing.bench_model --transport
 * shm --model echo): round trips in all three formats, options checking, a
 * model that never comes, and a model killed in the middle of a session. */
#include "c_test.h"

#include <stdlib.h>
#include <unistd.h>

typedef struct {
  char* dir;
  char* base;
  pid_t model;
} server;

static int start_server(server* s) {
  const char* args[] = {"mlbridge.testing.bench_model", "--base", NULL, "--model", "echo", "--format", "auto",
                        "--transport", "shm", "--idle-timeout", "120", NULL};
  memset(s, 0, sizeof *s);
  if (!mlbt_channel_new(&s->dir, &s->base)) return 0;
  args[2] = s->base;
  s->model = mlbt_python_start(args, NULL, 0);
  return s->model > 0;
}

static void stop_server(server* s) {
  mlbt_stop(s->model);
  if (s->base) { /* a killed model cannot remove its region */
    char path[4096];
    snprintf(path, sizeof path, "%s.shm", s->base);
    unlink(path);
  }
  mlbt_channel_free(s->dir, s->base);
}

static mlb_shm_options* make_options(const char* base, mlb_format format, int connect_timeout_ms) {
  mlb_shm_options* o = NULL;
  mlb_error* err = NULL;
  if (mlb_shm_options_create(&o, &err) != MLB_OK || mlb_shm_options_set_base(o, base, &err) != MLB_OK ||
      mlb_shm_options_set_format(o, format, &err) != MLB_OK ||
      mlb_shm_options_set_timeout_ms(o, 20000, &err) != MLB_OK ||
      mlb_shm_options_set_connect_timeout_ms(o, connect_timeout_ms, &err) != MLB_OK ||
      mlb_shm_options_set_spin_us(o, 50, &err) != MLB_OK) {
    fprintf(stderr, "shm options: %s\n", mlb_error_message(err));
    ++mlbt_failures;
    mlb_error_free(err);
    mlb_shm_options_destroy(o);
    return NULL;
  }
  return o;
}

static mlb_runner* connect_runner(const char* base, mlb_format format, const mlb_spec* const* features,
                                  const mlb_spec* const* advice, int connect_timeout_ms, mlb_status expect) {
  mlb_shm_options* o = make_options(base, format, connect_timeout_ms);
  mlb_runner* r = NULL;
  mlb_error* err = NULL;
  mlb_status st;
  if (!o) return NULL;
  st = mlb_shm_runner_create(features, 1, advice, 1, o, &r, &err);
  if (st != expect) {
    fprintf(stderr, "mlb_shm_runner_create (%s): %s, expected %s: %s\n", mlb_format_name(format),
            mlb_status_name(st), mlb_status_name(expect), mlb_error_message(err));
    ++mlbt_failures;
  }
  mlb_error_free(err);
  mlb_shm_options_destroy(o);
  return r;
}

static void round_trip(mlb_format format) {
  server srv;
  int64_t four = 4;
  mlb_spec* x = mlbt_spec("x", MLB_DTYPE_FLOAT64, &four, 1);
  mlb_spec* y = mlbt_spec("y", MLB_DTYPE_FLOAT64, &four, 1);
  const mlb_spec* features[1];
  const mlb_spec* advice[1];
  mlb_runner* r;
  const char* kind = NULL;
  int k;
  features[0] = x;
  advice[0] = y;
  if (!start_server(&srv)) {
    FAIL("the Python model server did not start");
    stop_server(&srv);
    return;
  }
  r = connect_runner(srv.base, format, features, advice, 20000, MLB_OK);
  if (r) {
    CHECK_RUNNER_OK(r, mlb_runner_kind(r, &kind));
    CHECK_STR_EQ("shm", kind);
    CHECK_RUNNER_OK(r, mlb_runner_set_context(r, "main"));
  }
  for (k = 0; r && k < 20; ++k) {
    double in[4] = {1e-300, -2.5, 0.0, 0.0}, got[4] = {0, 0, 0, 0};
    in[2] = k / 3.0;
    in[3] = -k * 1e9;
    CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "x", MLB_DTYPE_FLOAT64, in, 4));
    CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
    CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, MLB_DTYPE_FLOAT64, got, 4));
    CHECK(memcmp(in, got, sizeof in) == 0);
  }
  if (r) CHECK_RUNNER_OK(r, mlb_runner_finish(r));
  mlb_runner_destroy(r);
  /* A second session on the same channel. */
  r = connect_runner(srv.base, format, features, advice, 20000, MLB_OK);
  if (r) {
    double in[4] = {1, 2, 3, 4}, got[4];
    CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "x", MLB_DTYPE_FLOAT64, in, 4));
    CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
    CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, MLB_DTYPE_FLOAT64, got, 4));
    CHECK(memcmp(in, got, sizeof in) == 0);
  }
  mlb_runner_destroy(r);
  mlb_spec_destroy(x);
  mlb_spec_destroy(y);
  stop_server(&srv);
}

TEST(round_trip_bitstream) { round_trip(MLB_FORMAT_BITSTREAM); }
TEST(round_trip_json) { round_trip(MLB_FORMAT_JSON); }
TEST(round_trip_protobuf) { round_trip(MLB_FORMAT_PROTOBUF); }

TEST(options) {
  mlb_shm_options* o = NULL;
  mlb_error* err = NULL;
  mlb_runner* r = NULL;
  REQUIRE(mlb_shm_options_create(&o, &err) == MLB_OK);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_shm_options_set_spin_us(o, -1, &err), err);
  mlb_error_free(err);
  err = NULL;
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_shm_options_set_timeout_ms(o, 0, &err), err);
  mlb_error_free(err);
  err = NULL;
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_shm_options_set_base(o, "", &err), err);
  mlb_error_free(err);
  err = NULL;
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_shm_options_set_format(o, (mlb_format)99, &err), err);
  mlb_error_free(err);
  err = NULL;
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_shm_options_set_spin_us(NULL, 1, &err), err);
  mlb_error_free(err);
  err = NULL;
  /* No base: refused, not a crash. */
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_shm_runner_create(NULL, 0, NULL, 0, o, &r, &err), err);
  mlb_error_free(err);
  CHECK(r == NULL);
  mlb_shm_options_destroy(o);
}

TEST(model_never_comes) {
  char* dir = NULL;
  char* base = NULL;
  int64_t one = 1;
  mlb_spec* x = mlbt_spec("x", MLB_DTYPE_INT64, &one, 1);
  const mlb_spec* specs[1];
  mlb_runner* r;
  double start;
  specs[0] = x;
  REQUIRE(mlbt_channel_new(&dir, &base));
  start = mlbt_now_ms();
  r = connect_runner(base, MLB_FORMAT_BITSTREAM, specs, specs, 200, MLB_UNAVAILABLE);
  CHECK(r == NULL);
  CHECK(mlbt_now_ms() - start < 5000);
  mlb_runner_destroy(r);
  mlb_spec_destroy(x);
  mlbt_channel_free(dir, base);
}

/* Killed between two decisions: the next one is MLB_UNAVAILABLE within the
   timeout, and the session stays broken. */
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
  r = connect_runner(srv.base, format, specs, specs, 20000, MLB_OK);
  if (r) {
    int64_t d = 0;
    double start;
    CHECK_RUNNER_OK(r, mlb_runner_set_int64(r, "x", 7));
    CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
    CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, &d, 1));
    CHECK_INT_EQ(7, d);
    mlbt_kill(srv.model);
    srv.model = 0;
    start = mlbt_now_ms();
    CHECK_RUNNER(MLB_UNAVAILABLE, r, mlb_runner_evaluate(r));
    CHECK(mlbt_now_ms() - start < 20000);
    CHECK_CONTAINS(mlb_runner_last_error(r), "died");
    CHECK_RUNNER(MLB_FAILED_PRECONDITION, r, mlb_runner_evaluate(r));
  }
  mlb_runner_destroy(r);
  mlb_spec_destroy(x);
  stop_server(&srv);
}

TEST(model_killed_bitstream) { killed(MLB_FORMAT_BITSTREAM); }
TEST(model_killed_protobuf) { killed(MLB_FORMAT_PROTOBUF); }

int main(int argc, char** argv) {
  static const mlbt_case cases[] = {
      TEST_CASE(round_trip_bitstream), TEST_CASE(round_trip_json),        TEST_CASE(round_trip_protobuf),
      TEST_CASE(options),              TEST_CASE(model_never_comes),      TEST_CASE(model_killed_bitstream),
      TEST_CASE(model_killed_protobuf),
  };
  return RUN_TESTS(argc, argv, cases);
}
