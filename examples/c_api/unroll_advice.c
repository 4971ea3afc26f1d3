/* A plain C99 program asking a model for loop unroll factors through the
 * mlbridge C API: the smallest complete client, and what a compiler written
 * in C does (integrations/gcc/ is the same in a real compiler).
 *
 *   mlbridge-c-example policy.onnx 100 99 64        # built-in ONNX engine
 *   mlbridge-c-example --pipe BASE 100 99 64        # a model process on BASE.in / BASE.out
 *
 * prints one line per trip count: "trip_count=100 body_ops=12 -> unroll 4".
 * examples/c_api/unroll_policy.py writes a policy.onnx. Build with CMake
 * (target mlbridge-c-example) or by hand:
 *
 *   cc -std=c99 unroll_advice.c -I include -L build -lmlbridge -lstdc++ -lm -pthread
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlbridge/mlbridge.h"

/* Prints an error object's code and message, frees it, returns 1. */
static int report(const char* what, mlb_error* err) {
  fprintf(stderr, "%s: %s: %s\n", what, mlb_status_name(mlb_error_code(err)), mlb_error_message(err));
  mlb_error_free(err);
  return 1;
}

/* The runner: features trip_count and body_ops (int64 [1]), advice unroll. */
static int create_runner(const char* model_path, const char* pipe_base, mlb_runner** runner) {
  const int64_t dims[1] = {1};
  mlb_spec* trip = NULL;
  mlb_spec* body = NULL;
  mlb_spec* unroll = NULL;
  mlb_error* err = NULL;
  int rc = 1;
  if (mlb_spec_create("trip_count", MLB_DTYPE_INT64, dims, 1, &trip, &err) != MLB_OK ||
      mlb_spec_create("body_ops", MLB_DTYPE_INT64, dims, 1, &body, &err) != MLB_OK ||
      mlb_spec_create("unroll", MLB_DTYPE_INT64, dims, 1, &unroll, &err) != MLB_OK) {
    rc = report("spec", err);
  } else {
    const mlb_spec* features[2];
    const mlb_spec* advice[1];
    features[0] = trip;
    features[1] = body; /* not used by the example policy: the engine ignores extra features */
    advice[0] = unroll;
    if (pipe_base != NULL) {
      mlb_pipe_options* options = NULL;
      if (mlb_pipe_options_create(&options, &err) != MLB_OK ||
          mlb_pipe_options_set_base(options, pipe_base, &err) != MLB_OK ||
          mlb_pipe_options_set_timeout_ms(options, 5000, &err) != MLB_OK ||
          mlb_pipe_options_set_connect_timeout_ms(options, 5000, &err) != MLB_OK ||
          mlb_pipe_runner_create(features, 2, advice, 1, options, runner, &err) != MLB_OK)
        rc = report("pipe runner", err);
      else
        rc = 0;
      mlb_pipe_options_destroy(options);
    } else {
      mlb_onnx_model* model = NULL;
      if (mlb_onnx_model_load(model_path, NULL, &model, &err) != MLB_OK)
        rc = report(model_path, err);
      else if (mlb_onnx_runner_create(model, features, 2, advice, 1, runner, &err) != MLB_OK)
        rc = report("onnx runner", err);
      else
        rc = 0;
      mlb_onnx_model_destroy(model); /* the runner keeps the model alive */
    }
  }
  mlb_spec_destroy(trip); /* runners copy their specs */
  mlb_spec_destroy(body);
  mlb_spec_destroy(unroll);
  return rc;
}

int main(int argc, char** argv) {
  const char* model_path = NULL;
  const char* pipe_base = NULL;
  mlb_runner* runner = NULL;
  int first = 2, i, rc = 0;
  if (argc >= 3 && strcmp(argv[1], "--pipe") == 0) {
    pipe_base = argv[2];
    first = 3;
  } else if (argc >= 2) {
    model_path = argv[1];
  }
  if (first >= argc) {
    fprintf(stderr, "usage: %s MODEL.onnx | --pipe BASE  TRIP_COUNT...\n", argv[0]);
    return 2;
  }
  if (!MLB_LIBRARY_IS_COMPATIBLE()) {
    fprintf(stderr, "libmlbridge %s is older than this program's header\n", mlb_version_string());
    return 1;
  }
  if (create_runner(model_path, pipe_base, &runner) != 0) return 1;

  for (i = first; i < argc && rc == 0; ++i) {
    char* end = NULL;
    int64_t trip = strtoll(argv[i], &end, 10);
    int64_t body = 4 + (int64_t)i; /* a stand-in for a real body size */
    int64_t unroll = 0;
    if (*argv[i] == '\0' || *end != '\0') {
      fprintf(stderr, "not a trip count: '%s'\n", argv[i]);
      rc = 2;
      break;
    }
    /* Inputs by name, converted only when the value survives; the output is
       read with its own dtype, never reinterpreted. */
    if (mlb_runner_set_int64(runner, "trip_count", trip) != MLB_OK ||
        mlb_runner_set_int64(runner, "body_ops", body) != MLB_OK || mlb_runner_evaluate(runner) != MLB_OK ||
        mlb_runner_get_output(runner, 0, MLB_DTYPE_INT64, &unroll, 1) != MLB_OK) {
      fprintf(stderr, "trip_count=%s: %s: %s\n", argv[i], mlb_status_name(mlb_runner_last_status(runner)),
              mlb_runner_last_error(runner));
      rc = 1;
      break;
    }
    printf("trip_count=%lld body_ops=%lld -> unroll %lld\n", (long long)trip, (long long)body, (long long)unroll);
  }
  if (mlb_runner_finish(runner) != MLB_OK) {
    fprintf(stderr, "finish: %s\n", mlb_runner_last_error(runner));
    rc = 1;
  }
  mlb_runner_destroy(runner);
  return rc;
}
