/* Runner kind "grpc" through the C API, against the Python gRPC model server
 * (python -m mlbridge.testing.grpc_models): a round trip, a shared channel, a
 * model-side error, a server that is not there, and a server killed
 * mid-session. Built when the optional library mlbridge_grpc is. */
#include "c_test.h"

#include <stdlib.h>

typedef struct {
  pid_t pid;
  char address[64];
} server;

static int start_server(server* s, const char* model) {
  char ready[512];
  const char* args[] = {"mlbridge.testing.grpc_models", "--model", NULL, NULL};
  const char* port;
  args[2] = model;
  memset(s, 0, sizeof *s);
  s->pid = mlbt_python_start(args, ready, sizeof ready);
  if (s->pid <= 0) return 0;
  port = strstr(ready, "\"port\": ");
  if (!port) return 0;
  snprintf(s->address, sizeof s->address, "127.0.0.1:%d", atoi(port + 8));
  return 1;
}

static mlb_grpc_options* make_options(const char* address) {
  mlb_grpc_options* o = NULL;
  mlb_error* err = NULL;
  if (mlb_grpc_options_create(&o, &err) != MLB_OK || mlb_grpc_options_set_address(o, address, &err) != MLB_OK ||
      mlb_grpc_options_set_deadline_ms(o, 10000, &err) != MLB_OK ||
      mlb_grpc_options_set_retry(o, 3, 20, 100, 2000, &err) != MLB_OK ||
      mlb_grpc_options_set_client_name(o, "c-api-test", &err) != MLB_OK) {
    fprintf(stderr, "grpc options: %s\n", mlb_error_message(err));
    mlb_grpc_options_destroy(o);
    o = NULL;
  }
  mlb_error_free(err);
  return o;
}

/* x int64[3], w float[2] -> out int64[3] (the echo of x). */
typedef struct {
  mlb_spec* x;
  mlb_spec* w;
  mlb_spec* out;
  const mlb_spec* features[2];
  const mlb_spec* advice[1];
} specs;

static int make_specs(specs* s) {
  int64_t three = 3, two = 2;
  s->x = mlbt_spec("x", MLB_DTYPE_INT64, &three, 1);
  s->w = mlbt_spec("w", MLB_DTYPE_FLOAT32, &two, 1);
  s->out = mlbt_spec("out", MLB_DTYPE_INT64, &three, 1);
  s->features[0] = s->x;
  s->features[1] = s->w;
  s->advice[0] = s->out;
  return s->x && s->w && s->out;
}

static void free_specs(specs* s) {
  mlb_spec_destroy(s->x);
  mlb_spec_destroy(s->w);
  mlb_spec_destroy(s->out);
}

static void decide(mlb_runner* r, int64_t base) {
  int64_t x[3], got[3] = {0, 0, 0};
  float w[2] = {0.5f, 1.5f};
  const char* kind = NULL;
  x[0] = base;
  x[1] = -base;
  x[2] = INT64_MAX - base;
  CHECK_RUNNER_OK(r, mlb_runner_kind(r, &kind));
  CHECK_STR_EQ("grpc", kind);
  CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "x", MLB_DTYPE_INT64, x, 3));
  CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "w", MLB_DTYPE_FLOAT32, w, 2));
  CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
  CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, got, 3));
  CHECK(memcmp(x, got, sizeof x) == 0);
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_get_output(r, 0, MLB_DTYPE_UINT64, got, 3));
}

TEST(round_trip_and_shared_channel) {
  server srv;
  specs sp;
  mlb_grpc_options* o = NULL;
  mlb_grpc_channel* ch = NULL;
  mlb_runner* r = NULL;
  mlb_runner* r2 = NULL;
  mlb_error* err = NULL;
  REQUIRE(make_specs(&sp));
  REQUIRE(start_server(&srv, "echo"));
  o = make_options(srv.address);
  REQUIRE(o != NULL);
  CHECK_ERR_CALL(MLB_OK, mlb_grpc_runner_create(sp.features, 2, sp.advice, 1, o, &r, &err), err);
  if (r) {
    CHECK_RUNNER_OK(r, mlb_runner_set_context(r, "main"));
    decide(r, 1);
    decide(r, 2);
    CHECK_RUNNER_OK(r, mlb_runner_finish(r));
  }
  /* Two sessions on one connection. */
  CHECK_ERR_CALL(MLB_OK, mlb_grpc_options_set_streaming(o, 0, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_grpc_channel_create(o, &ch, &err), err);
  REQUIRE(ch != NULL);
  CHECK_ERR_CALL(MLB_OK, mlb_grpc_runner_create_on_channel(ch, sp.features, 2, sp.advice, 1, &r2, &err), err);
  mlb_grpc_channel_destroy(ch); /* the runner keeps the channel */
  if (r2) {
    decide(r2, 3);
    decide(r2, 4);
  }
  mlb_runner_destroy(r);
  mlb_runner_destroy(r2);
  mlb_grpc_options_destroy(o);
  mlb_error_free(err);
  free_specs(&sp);
  mlbt_kill(srv.pid);
}

TEST(model_error_is_aborted) {
  server srv;
  specs sp;
  mlb_grpc_options* o = NULL;
  mlb_runner* r = NULL;
  mlb_error* err = NULL;
  REQUIRE(make_specs(&sp));
  REQUIRE(start_server(&srv, "raise"));
  o = make_options(srv.address);
  REQUIRE(o != NULL);
  CHECK_ERR_CALL(MLB_OK, mlb_grpc_runner_create(sp.features, 2, sp.advice, 1, o, &r, &err), err);
  if (r) {
    int64_t got[3];
    CHECK_RUNNER(MLB_ABORTED, r, mlb_runner_evaluate(r));
    CHECK_CONTAINS(mlb_runner_last_error(r), "model failure");
    CHECK_RUNNER(MLB_FAILED_PRECONDITION, r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT64, got, 3));
  }
  mlb_runner_destroy(r);
  mlb_grpc_options_destroy(o);
  mlb_error_free(err);
  free_specs(&sp);
  mlbt_kill(srv.pid);
}

TEST(no_server_and_killed_server) {
  server srv;
  specs sp;
  mlb_grpc_options* o = NULL;
  mlb_runner* r = NULL;
  mlb_error* err = NULL;
  double start;
  REQUIRE(make_specs(&sp));
  REQUIRE(start_server(&srv, "echo"));
  o = make_options(srv.address);
  REQUIRE(o != NULL);
  CHECK_ERR_CALL(MLB_OK, mlb_grpc_runner_create(sp.features, 2, sp.advice, 1, o, &r, &err), err);
  if (r) decide(r, 5);
  mlbt_kill(srv.pid); /* returns once the process is gone */
  start = mlbt_now_ms();
  if (r) CHECK(mlb_runner_evaluate(r) != MLB_OK);
  CHECK(mlb_runner_last_error(r)[0] != '\0');
  CHECK(mlbt_now_ms() - start < 20000);
  mlb_runner_destroy(r);
  r = NULL;
  /* Nobody listens there any more: bounded by the retry budget (2 s). */
  start = mlbt_now_ms();
  CHECK_ERR_CALL(MLB_UNAVAILABLE, mlb_grpc_runner_create(sp.features, 2, sp.advice, 1, o, &r, &err), err);
  CHECK(r == NULL);
  CHECK(mlbt_now_ms() - start < 20000);
  mlb_grpc_options_destroy(o);
  mlb_error_free(err);
  free_specs(&sp);
}

TEST(shutdown_server) {
  server srv;
  mlb_grpc_options* o = NULL;
  mlb_grpc_channel* ch = NULL;
  mlb_error* err = NULL;
  REQUIRE(start_server(&srv, "echo"));
  o = make_options(srv.address);
  REQUIRE(o != NULL);
  CHECK_ERR_CALL(MLB_OK, mlb_grpc_channel_create(o, &ch, &err), err);
  if (ch) CHECK_ERR_CALL(MLB_OK, mlb_grpc_channel_shutdown_server(ch, "c api test", &err), err);
  mlb_grpc_channel_destroy(ch);
  mlb_grpc_options_destroy(o);
  mlb_error_free(err);
  mlbt_kill(srv.pid);
}

TEST(options) {
  mlb_grpc_options* o = NULL;
  mlb_error* err = NULL;
  CHECK_ERR_CALL(MLB_OK, mlb_grpc_options_create(&o, &err), err);
  REQUIRE(o != NULL);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_grpc_options_set_address(o, "", &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_grpc_options_set_deadline_ms(o, 0, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_grpc_options_set_retry(o, 0, 1, 1, 1, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_grpc_options_set_retry(o, 2, 100, 10, 1000, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_grpc_options_set_tls(o, 1, NULL, "cert.pem", NULL, NULL, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_grpc_options_set_tls(o, 1, "ca.pem", NULL, NULL, "localhost", &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_grpc_options_set_token(o, "secret", &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_grpc_options_set_max_message_bytes(o, 1 << 20, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_grpc_options_set_max_message_bytes(o, 0, &err), err);
  mlb_error_free(err);
  mlb_grpc_options_destroy(o);
}

int main(int argc, char** argv) {
  static const mlbt_case cases[] = {
      TEST_CASE(round_trip_and_shared_channel), TEST_CASE(model_error_is_aborted),
      TEST_CASE(no_server_and_killed_server),   TEST_CASE(shutdown_server),
      TEST_CASE(options),
  };
  return RUN_TESTS(argc, argv, cases);
}
