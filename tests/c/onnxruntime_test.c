/* Runner kind "onnxruntime" through the C API: the reference model of
 * tests/engine/models evaluated by ONNX Runtime (its outputs are the
 * reference). Built when the optional library mlbridge_onnxruntime is. */
#include "c_test.h"

#include <math.h>
#include <stdlib.h>

#define MODEL MLBT_MODELS_DIR "/mlp_deep_opset21.onnx"
#define REFERENCE MLBT_MODELS_DIR "/mlp_deep_opset21.bin"

static unsigned char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  unsigned char* data = NULL;
  long n;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
    data = (unsigned char*)malloc((size_t)n);
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
      free(data);
      data = NULL;
    }
    *size = (size_t)n;
  }
  fclose(f);
  return data;
}

TEST(evaluate_reference_model) {
  size_t size = 0, n = 0, i;
  unsigned char* ref = read_file(REFERENCE, &size);
  mlb_onnxruntime_options* o = NULL;
  mlb_onnxruntime_model* model = NULL;
  mlb_error* err = NULL;
  const mlb_spec* in = NULL;
  const mlb_spec* out = NULL;
  mlb_runner* r = NULL;
  const char* kind = NULL;
  char* version = NULL;
  float x[24], y[10], expected[10];
  REQUIRE(ref != NULL && size >= 136);
  memcpy(x, ref, sizeof x);
  memcpy(expected, ref + 96, sizeof expected);
  CHECK_ERR_CALL(MLB_OK, mlb_onnxruntime_version(&version, &err), err);
  CHECK(version != NULL && version[0] >= '1');
  mlb_string_free(version);
  REQUIRE(mlb_onnxruntime_options_create(&o, NULL) == MLB_OK);
  CHECK_ERR_CALL(MLB_OK, mlb_onnxruntime_options_set_intra_op_threads(o, 1, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_onnxruntime_options_set_optimization(o, MLB_ONNXRUNTIME_OPTIMIZE_BASIC, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_onnxruntime_options_set_optimization(o, 9, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_onnxruntime_options_set_log_severity(o, 5, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_onnxruntime_model_load(MODEL, o, &model, &err), err);
  mlb_onnxruntime_options_destroy(o);
  REQUIRE(model != NULL);
  CHECK_ERR_CALL(MLB_OK, mlb_onnxruntime_model_input_count(model, &n, &err), err);
  CHECK_INT_EQ(1, n);
  CHECK_ERR_CALL(MLB_OK, mlb_onnxruntime_model_input_spec(model, 0, &in, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_onnxruntime_model_output_spec(model, 0, &out, &err), err);
  CHECK_ERR_CALL(MLB_OUT_OF_RANGE, mlb_onnxruntime_model_input_spec(model, 3, &in, &err), err);
  REQUIRE(in && out);
  CHECK_STR_EQ("x", mlb_spec_name(in));
  CHECK_STR_EQ("y", mlb_spec_name(out));
  {
    const mlb_spec* features[1];
    const mlb_spec* advice[1];
    features[0] = in;
    advice[0] = out;
    CHECK_ERR_CALL(MLB_OK, mlb_onnxruntime_runner_create(model, features, 1, advice, 1, &r, &err), err);
  }
  mlb_onnxruntime_model_destroy(model);
  REQUIRE(r != NULL);
  CHECK_RUNNER_OK(r, mlb_runner_kind(r, &kind));
  CHECK_STR_EQ("onnxruntime", kind);
  CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "x", MLB_DTYPE_FLOAT32, x, 24));
  CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
  CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, MLB_DTYPE_FLOAT32, y, 10));
  for (i = 0; i < 10; ++i) CHECK(fabsf(expected[i] - y[i]) <= 1e-6f + 1e-5f * fabsf(expected[i]));
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_get_output(r, 0, MLB_DTYPE_INT32, y, 10));
  mlb_runner_destroy(r);
  CHECK(mlb_onnxruntime_model_load_from_memory("garbage", 7, NULL, &model, &err) != MLB_OK);
  CHECK(mlb_error_message(err)[0] != '\0');
  CHECK_ERR_CALL(MLB_NOT_FOUND, mlb_onnxruntime_model_load(MLBT_MODELS_DIR "/none.onnx", NULL, &model, &err), err);
  mlb_error_free(err);
  free(ref);
}

static int g_messages;
static int g_bad_levels;
static void count_messages(mlb_log_level level, const char* message, void* user) {
  if (level < MLB_LOG_DEBUG || level > MLB_LOG_ERROR || !message || !*message) ++g_bad_levels;
  if (strstr(message, "onnxruntime")) ++*(int*)user;
}

/* The log hook receives ONNX Runtime's messages (verbose, for this session). */
TEST(log_hook) {
  mlb_onnxruntime_options* o = NULL;
  mlb_onnxruntime_model* model = NULL;
  mlb_error* err = NULL;
  REQUIRE(mlb_onnxruntime_options_create(&o, NULL) == MLB_OK);
  CHECK_ERR_CALL(MLB_OK, mlb_onnxruntime_options_set_log_severity(o, 0, &err), err);
  CHECK_INT_EQ(MLB_OK, mlb_set_log_hook(count_messages, &g_messages));
  CHECK_ERR_CALL(MLB_OK, mlb_onnxruntime_model_load(MODEL, o, &model, &err), err);
  CHECK_INT_EQ(MLB_OK, mlb_set_log_hook(NULL, NULL));
  CHECK(g_messages > 0);
  CHECK_INT_EQ(0, g_bad_levels);
  mlb_onnxruntime_model_destroy(model);
  mlb_onnxruntime_options_destroy(o);
  mlb_error_free(err);
}

int main(int argc, char** argv) {
  static const mlbt_case cases[] = {
      TEST_CASE(evaluate_reference_model),
      TEST_CASE(log_hook),
  };
  return RUN_TESTS(argc, argv, cases);
}
