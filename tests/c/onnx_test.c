/* Runner kind "onnx": the built-in engine through the C API. With the engine
 * built (MLBT_EXPECT_ENGINE), a real model is evaluated and compared with the
 * reference outputs of tests/engine/models; without it, loading reports
 * MLB_UNIMPLEMENTED and the options still work. */
#include "c_test.h"

#include <math.h>
#include <stdlib.h>

#ifndef MLBT_MODELS_DIR
#error "MLBT_MODELS_DIR must name tests/engine/models"
#endif

/* mlp_deep_opset21: x float[1,24] -> y float[1,10]; the .bin holds case 0's
   input at offset 0 (96 bytes) and its reference output at offset 96. */
#define MODEL MLBT_MODELS_DIR "/mlp_deep_opset21.onnx"
#define REFERENCE MLBT_MODELS_DIR "/mlp_deep_opset21.bin"

TEST(options) {
  mlb_onnx_options* o = NULL;
  mlb_error* err = NULL;
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_options_create(&o, &err), err);
  REQUIRE(o != NULL);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_options_set_dim_value(o, "batch", 1, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_options_set_dim_value(o, "batch", 2, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_options_set_default_dim_value(o, 1, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_options_set_allow_newer_opsets(o, 0, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_options_set_portable_kernels(o, 1, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_onnx_options_set_dim_value(o, "batch", -1, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_onnx_options_set_dim_value(o, "", 1, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_onnx_options_set_default_dim_value(o, -3, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_onnx_options_set_portable_kernels(NULL, 1, &err), err);
  mlb_error_free(err);
  mlb_onnx_options_destroy(o);
  mlb_onnx_options_destroy(NULL);
  mlb_onnx_model_destroy(NULL);
}

#if defined(MLBT_EXPECT_ENGINE)

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

static void check_close(const float* expected, const float* got, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) {
    float tol = 1e-6f + 1e-5f * fabsf(expected[i]);
    if (!(fabsf(expected[i] - got[i]) <= tol)) {
      fprintf(stderr, "y[%u]: expected %.9g, got %.9g\n", (unsigned)i, expected[i], got[i]);
      ++mlbt_failures;
    }
  }
}

TEST(evaluate_reference_model) {
  size_t size = 0, n = 0;
  unsigned char* ref = read_file(REFERENCE, &size);
  mlb_onnx_model* model = NULL;
  mlb_onnx_options* o = NULL;
  mlb_error* err = NULL;
  const mlb_spec* in = NULL;
  const mlb_spec* out = NULL;
  mlb_runner* r = NULL;
  const char* kind = NULL;
  float x[24], y[10], expected[10];
  REQUIRE(ref != NULL && size >= 136);
  memcpy(x, ref, sizeof x);
  memcpy(expected, ref + 96, sizeof expected);
  REQUIRE(mlb_onnx_options_create(&o, NULL) == MLB_OK);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_model_load(MODEL, o, &model, &err), err);
  REQUIRE(model != NULL);
  mlb_onnx_options_destroy(o);

  /* The graph's specs: build the runner's specs from them. */
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_model_input_count(model, &n, &err), err);
  CHECK_INT_EQ(1, n);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_model_output_count(model, &n, &err), err);
  CHECK_INT_EQ(1, n);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_model_input_spec(model, 0, &in, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_model_output_spec(model, 0, &out, &err), err);
  CHECK_ERR_CALL(MLB_OUT_OF_RANGE, mlb_onnx_model_output_spec(model, 1, &out, &err), err);
  REQUIRE(in && out);
  CHECK_STR_EQ("x", mlb_spec_name(in));
  CHECK_INT_EQ(MLB_DTYPE_FLOAT32, mlb_spec_dtype(in));
  CHECK_INT_EQ(24, mlb_spec_element_count(in));
  CHECK_STR_EQ("y", mlb_spec_name(out));
  CHECK_INT_EQ(10, mlb_spec_element_count(out));
  {
    const mlb_spec* features[1];
    const mlb_spec* advice[1];
    features[0] = in;
    advice[0] = out;
    CHECK_ERR_CALL(MLB_OK, mlb_onnx_runner_create(model, features, 1, advice, 1, &r, &err), err);
  }
  /* The runner keeps the model alive. */
  mlb_onnx_model_destroy(model);
  REQUIRE(r != NULL);
  CHECK_RUNNER_OK(r, mlb_runner_kind(r, &kind));
  CHECK_STR_EQ("onnx", kind);
  CHECK_RUNNER_OK(r, mlb_runner_set_feature(r, "x", MLB_DTYPE_FLOAT32, x, 24));
  CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
  CHECK_RUNNER_OK(r, mlb_runner_get_output(r, 0, MLB_DTYPE_FLOAT32, y, 10));
  check_close(expected, y, 10);
  CHECK_RUNNER(MLB_INVALID_ARGUMENT, r, mlb_runner_get_output(r, 0, MLB_DTYPE_FLOAT64, y, 10));
  /* Zero-copy input, twice: the same answer. */
  {
    void* p = NULL;
    size_t bytes = 0;
    CHECK_RUNNER_OK(r, mlb_runner_input_data(r, 0, MLB_DTYPE_FLOAT32, &p, &bytes));
    CHECK_INT_EQ(96, bytes);
    if (p) memcpy(p, x, sizeof x);
    memset(y, 0, sizeof y);
    CHECK_RUNNER_OK(r, mlb_runner_evaluate(r));
    CHECK_RUNNER_OK(r, mlb_runner_get_output_by_name(r, "y", MLB_DTYPE_FLOAT32, y, 10));
    check_close(expected, y, 10);
  }
  CHECK_RUNNER_OK(r, mlb_runner_finish(r));
  mlb_runner_destroy(r);
  mlb_error_free(err);
  free(ref);
}

TEST(load_from_memory_and_errors) {
  size_t size = 0;
  unsigned char* bytes = read_file(MODEL, &size);
  mlb_onnx_model* model = NULL;
  mlb_error* err = NULL;
  int64_t dims[2] = {1, 24}, wrong[2] = {1, 25};
  mlb_spec* x = mlbt_spec("x", MLB_DTYPE_FLOAT32, dims, 2);
  mlb_spec* x_wrong = mlbt_spec("x", MLB_DTYPE_FLOAT32, wrong, 2);
  mlb_spec* other = mlbt_spec("z", MLB_DTYPE_FLOAT32, dims, 2);
  int64_t ydims[2] = {1, 10};
  mlb_spec* y = mlbt_spec("y", MLB_DTYPE_FLOAT32, ydims, 2);
  mlb_runner* r = NULL;
  REQUIRE(bytes && x && x_wrong && other && y);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_model_load_from_memory(bytes, size, NULL, &model, &err), err);
  REQUIRE(model != NULL);
  {
    const mlb_spec* good[1];
    const mlb_spec* bad_shape[1];
    const mlb_spec* missing[1];
    const mlb_spec* advice[1];
    good[0] = x;
    bad_shape[0] = x_wrong;
    missing[0] = other;
    advice[0] = y;
    CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_onnx_runner_create(model, bad_shape, 1, advice, 1, &r, &err), err);
    CHECK_CONTAINS(mlb_error_message(err), "x");
    CHECK(mlb_onnx_runner_create(model, missing, 1, advice, 1, &r, &err) != MLB_OK);
    CHECK(r == NULL);
    CHECK_ERR_CALL(MLB_OK, mlb_onnx_runner_create(model, good, 1, advice, 1, &r, &err), err);
    mlb_runner_destroy(r);
  }
  /* Not a model; no file. */
  CHECK(mlb_onnx_model_load_from_memory("garbage", 7, NULL, &model, &err) != MLB_OK);
  CHECK(mlb_error_message(err)[0] != '\0');
  CHECK_ERR_CALL(MLB_NOT_FOUND, mlb_onnx_model_load(MLBT_MODELS_DIR "/no_such_model.onnx", NULL, &model, &err), err);
  mlb_onnx_model_destroy(model);
  mlb_error_free(err);
  mlb_spec_destroy(x);
  mlb_spec_destroy(x_wrong);
  mlb_spec_destroy(other);
  mlb_spec_destroy(y);
  free(bytes);
}

/* Limits: the 1 GiB ConstantOfShape model fails fast, naming the node and
   the option; limits are settable and checked; a small model limit refuses
   a model before reading it. */
TEST(limits) {
  mlb_onnx_options* o = NULL;
  mlb_onnx_model* model = NULL;
  mlb_error* err = NULL;
  REQUIRE(mlb_onnx_options_create(&o, NULL) == MLB_OK);
  CHECK_ERR_CALL(MLB_RESOURCE_EXHAUSTED,
                 mlb_onnx_model_load(MLBT_MODELS_DIR "/limits/constant_of_shape_bomb.onnx", o, &model, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "\"big\" (ConstantOfShape)");
  CHECK_CONTAINS(mlb_error_message(err), "maxFoldedBytes");
  CHECK(model == NULL);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_options_set_max_tensor_bytes(o, 1u << 20, &err), err);
  CHECK_ERR_CALL(MLB_RESOURCE_EXHAUSTED,
                 mlb_onnx_model_load(MLBT_MODELS_DIR "/limits/constant_of_shape_bomb.onnx", o, &model, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "tensor limit");
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_options_set_max_folded_bytes(o, 1u << 20, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_options_set_load_timeout_ms(o, 0, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_options_set_max_graph_depth(o, 2, &err), err);
  CHECK_ERR_CALL(MLB_RESOURCE_EXHAUSTED, mlb_onnx_model_load(MODEL, o, &model, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "maxGraphDepth");
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_options_set_max_graph_depth(o, 10000, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_onnx_options_set_max_model_bytes(o, 64, &err), err);
  CHECK_ERR_CALL(MLB_RESOURCE_EXHAUSTED, mlb_onnx_model_load_from_memory("0123456789012345678901234567890123456789"
                 "012345678901234567890123456789", 70, o, &model, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "maxFileBytes");
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_onnx_options_set_max_model_bytes(o, 0, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_onnx_options_set_max_tensor_bytes(o, 0, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_onnx_options_set_max_folded_bytes(NULL, 1, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_onnx_options_set_load_timeout_ms(o, -1, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_onnx_options_set_max_graph_depth(o, 0, &err), err);
  mlb_error_free(err);
  mlb_onnx_options_destroy(o);
}

#else

TEST(without_engine) {
  mlb_onnx_model* model = NULL;
  mlb_error* err = NULL;
  CHECK_ERR_CALL(MLB_UNIMPLEMENTED, mlb_onnx_model_load(MODEL, NULL, &model, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "MLBRIDGE_WITH_ENGINE");
  CHECK_ERR_CALL(MLB_UNIMPLEMENTED, mlb_onnx_model_load_from_memory("x", 1, NULL, &model, &err), err);
  CHECK(model == NULL);
  mlb_error_free(err);
}

#endif

int main(int argc, char** argv) {
  static const mlbt_case cases[] = {
      TEST_CASE(options),
#if defined(MLBT_EXPECT_ENGINE)
      TEST_CASE(evaluate_reference_model),
      TEST_CASE(load_from_memory_and_errors),
      TEST_CASE(limits),
      SKIPPED_CASE(without_engine, "the ONNX engine is built (MLBRIDGE_WITH_ENGINE=ON)"),
#else
      SKIPPED_CASE(evaluate_reference_model, "built without the ONNX engine (MLBRIDGE_WITH_ENGINE=OFF)"),
      SKIPPED_CASE(load_from_memory_and_errors, "built without the ONNX engine (MLBRIDGE_WITH_ENGINE=OFF)"),
      SKIPPED_CASE(limits, "built without the ONNX engine (MLBRIDGE_WITH_ENGINE=OFF)"),
      TEST_CASE(without_engine),
#endif
  };
  return RUN_TESTS(argc, argv, cases);
}
