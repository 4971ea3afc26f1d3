/* Evaluates an exported inliner policy with mlbridge's built-in ONNX engine
   (NativeModelRunner through the C API), the way a compiler would load it.

     onnx_policy_check MODEL.onnx ROWS.txt

   ROWS.txt: first line the feature names, then one observation per line
   (int64 values in that order). Prints one decision per line. Exit 1 with the
   error on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlbridge/mlbridge.h"

#define MAX_FEATURES 64

static int fail(const char* what, const char* msg) {
  fprintf(stderr, "onnx_policy_check: %s: %s\n", what, msg);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3) return fail("usage", "onnx_policy_check MODEL.onnx ROWS.txt");
  FILE* in = fopen(argv[2], "r");
  if (!in) return fail("open", argv[2]);
  char names[MAX_FEATURES][128];
  mlb_spec* specs[MAX_FEATURES];
  size_t n = 0;
  int64_t one = 1;
  char line[8192];
  if (!fgets(line, sizeof line, in)) return fail("read", "no header line");
  for (char* tok = strtok(line, " \n"); tok && n < MAX_FEATURES; tok = strtok(NULL, " \n")) {
    snprintf(names[n], sizeof names[n], "%s", tok);
    mlb_error* err = NULL;
    if (mlb_spec_create(names[n], MLB_DTYPE_INT64, &one, 1, &specs[n], &err) != MLB_OK)
      return fail("spec", mlb_error_message(err));
    ++n;
  }
  mlb_spec* advice = NULL;
  mlb_error* err = NULL;
  if (mlb_spec_create("inlining_decision", MLB_DTYPE_INT64, &one, 1, &advice, &err) != MLB_OK)
    return fail("spec", mlb_error_message(err));
  mlb_onnx_model* model = NULL;
  if (mlb_onnx_model_load(argv[1], NULL, &model, &err) != MLB_OK) return fail("load", mlb_error_message(err));
  mlb_runner* runner = NULL;
  const mlb_spec* adv[1] = {advice};
  if (mlb_onnx_runner_create(model, (const mlb_spec* const*)specs, n, adv, 1, &runner, &err) != MLB_OK)
    return fail("runner", mlb_error_message(err));
  while (fgets(line, sizeof line, in)) {
    char* p = line;
    for (size_t i = 0; i < n; ++i) {
      char* end = NULL;
      long long v = strtoll(p, &end, 10);
      if (end == p) return fail("row", "too few values");
      p = end;
      int64_t x = (int64_t)v;
      if (mlb_runner_set_feature(runner, names[i], MLB_DTYPE_INT64, &x, 1) != MLB_OK)
        return fail("set", mlb_runner_last_error(runner));
    }
    if (mlb_runner_evaluate(runner) != MLB_OK) return fail("evaluate", mlb_runner_last_error(runner));
    int64_t d = 0;
    if (mlb_runner_get_output(runner, 0, MLB_DTYPE_INT64, &d, 1) != MLB_OK)
      return fail("output", mlb_runner_last_error(runner));
    printf("%lld\n", (long long)d);
  }
  mlb_runner_destroy(runner);
  mlb_onnx_model_destroy(model);
  mlb_spec_destroy(advice);
  for (size_t i = 0; i < n; ++i) mlb_spec_destroy(specs[i]);
  fclose(in);
  return 0;
}
