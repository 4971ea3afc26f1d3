/* The C API without a model: versions, status codes and errors, dtypes,
 * formats, specs (incl. LLVM JSON), options, the log hook, argument checks. */
#include "c_test.h"

#include <stdlib.h>

TEST(version) {
  uint32_t api = mlb_api_version();
  char expected[64];
  CHECK(api >= 1);
  CHECK_INT_EQ(MLB_API_VERSION, api);
  CHECK(MLB_LIBRARY_IS_COMPATIBLE());
  /* A program built against a newer header would see a larger macro. */
  CHECK(api < (uint32_t)MLB_API_VERSION + 1);
  snprintf(expected, sizeof expected, "%d.%d.%d", MLB_VERSION_MAJOR, MLB_VERSION_MINOR, MLB_VERSION_PATCH);
  CHECK_STR_EQ(expected, mlb_version_string());
}

TEST(status_names) {
  CHECK_STR_EQ("OK", mlb_status_name(MLB_OK));
  CHECK_STR_EQ("CANCELLED", mlb_status_name(MLB_CANCELLED));
  CHECK_STR_EQ("INVALID_ARGUMENT", mlb_status_name(MLB_INVALID_ARGUMENT));
  CHECK_STR_EQ("DEADLINE_EXCEEDED", mlb_status_name(MLB_DEADLINE_EXCEEDED));
  CHECK_STR_EQ("NOT_FOUND", mlb_status_name(MLB_NOT_FOUND));
  CHECK_STR_EQ("PERMISSION_DENIED", mlb_status_name(MLB_PERMISSION_DENIED));
  CHECK_STR_EQ("RESOURCE_EXHAUSTED", mlb_status_name(MLB_RESOURCE_EXHAUSTED));
  CHECK_STR_EQ("FAILED_PRECONDITION", mlb_status_name(MLB_FAILED_PRECONDITION));
  CHECK_STR_EQ("ABORTED", mlb_status_name(MLB_ABORTED));
  CHECK_STR_EQ("OUT_OF_RANGE", mlb_status_name(MLB_OUT_OF_RANGE));
  CHECK_STR_EQ("UNIMPLEMENTED", mlb_status_name(MLB_UNIMPLEMENTED));
  CHECK_STR_EQ("INTERNAL", mlb_status_name(MLB_INTERNAL));
  CHECK_STR_EQ("UNAVAILABLE", mlb_status_name(MLB_UNAVAILABLE));
  CHECK_STR_EQ("DATA_LOSS", mlb_status_name(MLB_DATA_LOSS));
  /* Codes from a newer library are still printable. */
  CHECK_STR_EQ("UNKNOWN", mlb_status_name(99));
  CHECK_STR_EQ("UNKNOWN", mlb_status_name(-1));
}

TEST(error_objects) {
  mlb_error* err = NULL;
  mlb_format f = 0;
  /* NULL is accepted everywhere. */
  CHECK_INT_EQ(MLB_OK, mlb_error_code(NULL));
  CHECK_STR_EQ("", mlb_error_message(NULL));
  mlb_error_free(NULL);
  mlb_string_free(NULL);
  /* A failure fills the error; the code is returned as well. */
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_format_parse("xml", &f, &err));
  REQUIRE(err != NULL);
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_error_code(err));
  CHECK_CONTAINS(mlb_error_message(err), "xml");
  /* A second failure replaces (and frees) the first error. */
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_format_parse("yaml", &f, &err));
  CHECK_CONTAINS(mlb_error_message(err), "yaml");
  /* Success leaves it alone. */
  CHECK_INT_EQ(MLB_OK, mlb_format_parse("json", &f, &err));
  CHECK_CONTAINS(mlb_error_message(err), "yaml");
  mlb_error_free(err);
  err = NULL;
  CHECK_INT_EQ(MLB_OK, mlb_format_parse("json", &f, &err));
  CHECK(err == NULL);
  /* The message is optional. */
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_format_parse("xml", &f, NULL));
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_format_parse(NULL, &f, NULL));
}

TEST(dtypes) {
  static const struct {
    mlb_dtype dtype;
    const char* name;
    const char* numpy;
    size_t size;
  } rows[] = {
      {MLB_DTYPE_FLOAT32, "float", "float32", 4},   {MLB_DTYPE_FLOAT64, "double", "float64", 8},
      {MLB_DTYPE_INT8, "int8_t", "int8", 1},        {MLB_DTYPE_UINT8, "uint8_t", "uint8", 1},
      {MLB_DTYPE_INT16, "int16_t", "int16", 2},     {MLB_DTYPE_UINT16, "uint16_t", "uint16", 2},
      {MLB_DTYPE_INT32, "int32_t", "int32", 4},     {MLB_DTYPE_UINT32, "uint32_t", "uint32", 4},
      {MLB_DTYPE_INT64, "int64_t", "int64", 8},     {MLB_DTYPE_UINT64, "uint64_t", "uint64", 8},
      {MLB_DTYPE_BOOL, "bool", "bool_", 1},         {MLB_DTYPE_STRING, "string", "str", 0},
  };
  size_t i;
  for (i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
    CHECK_STR_EQ(rows[i].name, mlb_dtype_name(rows[i].dtype));
    CHECK_INT_EQ(rows[i].size, mlb_dtype_size(rows[i].dtype));
    CHECK_INT_EQ(rows[i].dtype, mlb_dtype_parse(rows[i].name));
    CHECK_INT_EQ(rows[i].dtype, mlb_dtype_parse(rows[i].numpy));
  }
  /* The numbering is the wire numbering. */
  CHECK_INT_EQ(1, MLB_DTYPE_FLOAT32);
  CHECK_INT_EQ(9, MLB_DTYPE_INT64);
  CHECK_INT_EQ(12, MLB_DTYPE_STRING);
  CHECK_STR_EQ("invalid", mlb_dtype_name(MLB_DTYPE_INVALID));
  CHECK_STR_EQ("invalid", mlb_dtype_name(99));
  CHECK_STR_EQ("invalid", mlb_dtype_name(-3));
  CHECK_INT_EQ(0, mlb_dtype_size(99));
  CHECK_INT_EQ(MLB_DTYPE_INVALID, mlb_dtype_parse("float16"));
  CHECK_INT_EQ(MLB_DTYPE_INVALID, mlb_dtype_parse(""));
  CHECK_INT_EQ(MLB_DTYPE_INVALID, mlb_dtype_parse(NULL));
}

TEST(formats) {
  mlb_format f = 0;
  mlb_error* err = NULL;
  CHECK_STR_EQ("bitstream", mlb_format_name(MLB_FORMAT_BITSTREAM));
  CHECK_STR_EQ("json", mlb_format_name(MLB_FORMAT_JSON));
  CHECK_STR_EQ("protobuf", mlb_format_name(MLB_FORMAT_PROTOBUF));
  CHECK_STR_EQ("invalid", mlb_format_name(0));
  CHECK_ERR_CALL(MLB_OK, mlb_format_parse("bitstream", &f, &err), err);
  CHECK_INT_EQ(MLB_FORMAT_BITSTREAM, f);
  CHECK_ERR_CALL(MLB_OK, mlb_format_parse("protobuf", &f, &err), err);
  CHECK_INT_EQ(MLB_FORMAT_PROTOBUF, f);
  CHECK_ERR_CALL(MLB_OK, mlb_format_parse("json", &f, &err), err);
  CHECK_INT_EQ(MLB_FORMAT_JSON, f);
  CHECK(err == NULL);
}

TEST(spec_create) {
  int64_t dims[2] = {2, 3};
  mlb_spec* s = NULL;
  mlb_spec* scalar = NULL;
  mlb_spec* copy = NULL;
  mlb_error* err = NULL;
  CHECK_ERR_CALL(MLB_OK, mlb_spec_create("weights", MLB_DTYPE_FLOAT32, dims, 2, &s, &err), err);
  REQUIRE(s != NULL);
  CHECK_STR_EQ("weights", mlb_spec_name(s));
  CHECK_INT_EQ(MLB_DTYPE_FLOAT32, mlb_spec_dtype(s));
  CHECK_INT_EQ(2, mlb_spec_rank(s));
  REQUIRE(mlb_spec_dims(s) != NULL);
  CHECK_INT_EQ(2, mlb_spec_dims(s)[0]);
  CHECK_INT_EQ(3, mlb_spec_dims(s)[1]);
  CHECK_INT_EQ(6, mlb_spec_element_count(s));
  CHECK_INT_EQ(24, mlb_spec_byte_size(s));
  /* The spec owns a copy of the dims. */
  dims[0] = 7;
  CHECK_INT_EQ(2, mlb_spec_dims(s)[0]);

  /* Scalars: rank 0, dims may be NULL, one element. */
  CHECK_ERR_CALL(MLB_OK, mlb_spec_create("flag", MLB_DTYPE_BOOL, NULL, 0, &scalar, &err), err);
  REQUIRE(scalar != NULL);
  CHECK_INT_EQ(0, mlb_spec_rank(scalar));
  CHECK(mlb_spec_dims(scalar) == NULL);
  CHECK_INT_EQ(1, mlb_spec_element_count(scalar));
  CHECK_INT_EQ(1, mlb_spec_byte_size(scalar));

  CHECK_ERR_CALL(MLB_OK, mlb_spec_clone(s, &copy, &err), err);
  CHECK(mlb_spec_equal(s, copy));
  CHECK(!mlb_spec_equal(s, scalar));
  CHECK(!mlb_spec_equal(s, NULL));
  mlb_spec_destroy(s);
  CHECK_STR_EQ("weights", mlb_spec_name(copy)); /* independent of the original */
  mlb_spec_destroy(copy);
  mlb_spec_destroy(scalar);
  mlb_spec_destroy(NULL);

  /* NULL accessors. */
  CHECK(mlb_spec_name(NULL) == NULL);
  CHECK_INT_EQ(MLB_DTYPE_INVALID, mlb_spec_dtype(NULL));
  CHECK_INT_EQ(0, mlb_spec_rank(NULL));
  CHECK_INT_EQ(0, mlb_spec_element_count(NULL));
  CHECK(err == NULL);
}

TEST(spec_create_errors) {
  int64_t neg[2] = {2, -1};
  int64_t huge[3] = {1 << 20, 1 << 20, 1 << 20};
  int64_t one = 1;
  mlb_spec* s = NULL;
  mlb_error* err = NULL;
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_spec_create("", MLB_DTYPE_FLOAT32, &one, 1, &s, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "empty name");
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_spec_create("x", MLB_DTYPE_FLOAT32, neg, 2, &s, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "negative");
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_spec_create("x", MLB_DTYPE_INVALID, &one, 1, &s, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "dtype");
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_spec_create("x", 42, &one, 1, &s, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_spec_create("x", MLB_DTYPE_INT8, huge, 3, &s, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "too large");
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_spec_create("x", MLB_DTYPE_INT8, NULL, 2, &s, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_spec_create(NULL, MLB_DTYPE_INT8, NULL, 0, &s, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_spec_create("x", MLB_DTYPE_INT8, NULL, 0, NULL, &err), err);
  CHECK(s == NULL); /* untouched on failure */
  mlb_error_free(err);
}

TEST(spec_json) {
  static const char* llvm = "{\"name\":\"callee_users\",\"type\":\"int64_t\",\"port\":0,\"shape\":[1]}";
  mlb_spec* s = NULL;
  mlb_spec* t = NULL;
  mlb_error* err = NULL;
  char* json = NULL;
  CHECK_ERR_CALL(MLB_OK, mlb_spec_from_json(llvm, MLB_NUL_TERMINATED, &s, &err), err);
  REQUIRE(s != NULL);
  CHECK_STR_EQ("callee_users", mlb_spec_name(s));
  CHECK_INT_EQ(MLB_DTYPE_INT64, mlb_spec_dtype(s));
  CHECK_INT_EQ(1, mlb_spec_rank(s));
  CHECK_INT_EQ(1, mlb_spec_dims(s)[0]);
  CHECK_ERR_CALL(MLB_OK, mlb_spec_to_json(s, &json, &err), err);
  CHECK_STR_EQ(llvm, json); /* LLVM's exact form */
  mlb_string_free(json);

  /* Any key order, white space, numpy names, explicit length (no NUL needed). */
  {
    const char text[] = " { \"shape\" : [2, 3], \"type\": \"float32\", \"name\": \"w\" }TRAILING";
    CHECK_ERR_CALL(MLB_OK, mlb_spec_from_json(text, strlen(text) - strlen("TRAILING"), &t, &err), err);
    REQUIRE(t != NULL);
    CHECK_STR_EQ("w", mlb_spec_name(t));
    CHECK_INT_EQ(MLB_DTYPE_FLOAT32, mlb_spec_dtype(t));
    CHECK_INT_EQ(6, mlb_spec_element_count(t));
    CHECK_ERR_CALL(MLB_OK, mlb_spec_to_json(t, &json, &err), err);
    CHECK_STR_EQ("{\"name\":\"w\",\"type\":\"float\",\"port\":0,\"shape\":[2,3]}", json);
    mlb_string_free(json);
  }
  CHECK(err == NULL);
  mlb_spec_destroy(s);
  mlb_spec_destroy(t);
}

TEST(spec_bad_json) {
  static const struct {
    const char* text;
    mlb_status code;
    const char* in_message;
  } bad[] = {
      {"", MLB_DATA_LOSS, ""},
      {"{\"name\":\"x\",\"type\":\"float\",\"shape\":[1]", MLB_DATA_LOSS, ""}, /* truncated */
      {"[1,2]", MLB_DATA_LOSS, "not a JSON object"},
      {"{\"type\":\"float\",\"shape\":[1]}", MLB_DATA_LOSS, "name"},
      {"{\"name\":\"x\",\"shape\":[1]}", MLB_DATA_LOSS, "type"},
      {"{\"name\":\"x\",\"type\":\"float\"}", MLB_DATA_LOSS, "shape"},
      {"{\"name\":\"x\",\"type\":\"float16\",\"shape\":[1]}", MLB_INVALID_ARGUMENT, "float16"},
      {"{\"name\":\"x\",\"type\":\"float\",\"shape\":[1.5]}", MLB_DATA_LOSS, "non-integer"},
      {"{\"name\":\"x\",\"type\":\"float\",\"shape\":[-2]}", MLB_INVALID_ARGUMENT, "negative"},
      {"{\"name\":\"\",\"type\":\"float\",\"shape\":[1]}", MLB_INVALID_ARGUMENT, "empty name"},
  };
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    mlb_spec* s = NULL;
    mlb_error* err = NULL;
    mlb_status st = mlb_spec_from_json(bad[i].text, MLB_NUL_TERMINATED, &s, &err);
    if (st != bad[i].code) fprintf(stderr, "case %u: %s\n", (unsigned)i, mlb_error_message(err));
    CHECK_INT_EQ(bad[i].code, st);
    CHECK(s == NULL);
    REQUIRE(err != NULL);
    CHECK_INT_EQ(st, mlb_error_code(err));
    CHECK(mlb_error_message(err)[0] != '\0');
    CHECK_CONTAINS(mlb_error_message(err), bad[i].in_message);
    mlb_error_free(err);
  }
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_spec_from_json(NULL, 0, NULL, NULL));
}

TEST(pipe_options) {
  mlb_pipe_options* o = NULL;
  mlb_error* err = NULL;
  CHECK_ERR_CALL(MLB_OK, mlb_pipe_options_create(&o, &err), err);
  REQUIRE(o != NULL);
  CHECK_ERR_CALL(MLB_OK, mlb_pipe_options_set_base(o, "/tmp/x/chan", &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_pipe_options_set_format(o, MLB_FORMAT_PROTOBUF, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_pipe_options_set_timeout_ms(o, 500, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_pipe_options_set_connect_timeout_ms(o, 500, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_pipe_options_set_create_fifos(o, 1, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_pipe_options_set_allow_shared_folder(o, 0, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_pipe_options_set_max_message_bytes(o, 1 << 20, &err), err);
  CHECK(err == NULL);

  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_options_set_format(o, 7, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "format");
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_options_set_timeout_ms(o, 0, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "positive");
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_options_set_connect_timeout_ms(o, -5, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_options_set_base(o, "", &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_options_set_base(o, NULL, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_options_set_max_message_bytes(o, 0, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_options_set_timeout_ms(NULL, 10, &err), err);
  mlb_error_free(err);
  mlb_pipe_options_destroy(o);
  mlb_pipe_options_destroy(NULL);
}

TEST(pipe_runner_argument_errors) {
  int64_t one = 1;
  mlb_spec* f = mlbt_spec("x", MLB_DTYPE_INT64, &one, 1);
  mlb_spec* a = mlbt_spec("y", MLB_DTYPE_INT64, &one, 1);
  mlb_spec* str = mlbt_spec("s", MLB_DTYPE_STRING, &one, 1);
  mlb_pipe_options* o = NULL;
  mlb_runner* r = NULL;
  mlb_error* err = NULL;
  REQUIRE(f && a && str);
  {
    const mlb_spec* features[] = {f};
    const mlb_spec* advice[] = {a};
    const mlb_spec* dup[] = {f, f};
    const mlb_spec* strings[] = {str};
    const mlb_spec* holes[] = {f, NULL};
    REQUIRE(mlb_pipe_options_create(&o, NULL) == MLB_OK);
    /* No base path set. */
    CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_runner_create(features, 1, advice, 1, o, &r, &err), err);
    CHECK_CONTAINS(mlb_error_message(err), "base");
    REQUIRE(mlb_pipe_options_set_base(o, "/nonexistent-mlbridge-dir/chan", NULL) == MLB_OK);
    REQUIRE(mlb_pipe_options_set_connect_timeout_ms(o, 50, NULL) == MLB_OK);
    CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_runner_create(features, 1, advice, 0, o, &r, &err), err);
    CHECK_CONTAINS(mlb_error_message(err), "advice");
    CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_runner_create(dup, 2, advice, 1, o, &r, &err), err);
    CHECK_CONTAINS(mlb_error_message(err), "duplicate");
    CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_runner_create(holes, 2, advice, 1, o, &r, &err), err);
    CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_runner_create(NULL, 1, advice, 1, o, &r, &err), err);
    CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_runner_create(features, 1, advice, 1, NULL, &r, &err), err);
    CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_pipe_runner_create(features, 1, advice, 1, o, NULL, &err), err);
    /* The bitstream format cannot carry strings: refused before connecting. */
    CHECK_ERR_CALL(MLB_UNIMPLEMENTED, mlb_pipe_runner_create(strings, 1, advice, 1, o, &r, &err), err);
    CHECK_CONTAINS(mlb_error_message(err), "string");
    CHECK(r == NULL);
  }
  mlb_error_free(err);
  mlb_pipe_options_destroy(o);
  mlb_spec_destroy(f);
  mlb_spec_destroy(a);
  mlb_spec_destroy(str);
}

TEST(null_runner) {
  size_t n = 0;
  const char* kind = NULL;
  int64_t v = 0;
  CHECK_STR_EQ("", mlb_runner_last_error(NULL));
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_runner_last_status(NULL));
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_runner_kind(NULL, &kind));
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_runner_input_count(NULL, &n));
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_runner_set_int64(NULL, "x", 1));
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_runner_evaluate(NULL));
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_runner_get_output(NULL, 0, MLB_DTYPE_INT64, &v, 1));
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, mlb_runner_finish(NULL));
  mlb_runner_destroy(NULL);
}

static int g_log_calls;
static void count_log(mlb_log_level level, const char* message, void* user) {
  (void)level;
  (void)message;
  ++*(int*)user;
}

TEST(log_hook) {
  /* Installing and removing a hook always succeeds; the library logs only
     unusual events, so this checks the plumbing, not a message. */
  CHECK_INT_EQ(MLB_OK, mlb_set_log_hook(count_log, &g_log_calls));
  CHECK_INT_EQ(MLB_OK, mlb_set_log_hook(count_log, &g_log_calls));
  CHECK_INT_EQ(MLB_OK, mlb_set_log_hook(NULL, NULL));
  CHECK_INT_EQ(0, g_log_calls);
}

TEST(private_channel_dir) {
  char* dir = NULL;
  char* dir2 = NULL;
  mlb_error* err = NULL;
  CHECK_ERR_CALL(MLB_OK, mlb_make_private_channel_dir(NULL, &dir, &err), err);
  REQUIRE(dir != NULL);
  CHECK_CONTAINS(dir, "mlbridge-");
  /* Under an explicit parent. */
  CHECK_ERR_CALL(MLB_OK, mlb_make_private_channel_dir(dir, &dir2, &err), err);
  REQUIRE(dir2 != NULL);
  CHECK(strncmp(dir2, dir, strlen(dir)) == 0);
  CHECK_ERR_CALL(MLB_UNAVAILABLE, mlb_make_private_channel_dir("/nonexistent-mlbridge-parent", &dir, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "nonexistent-mlbridge-parent");
  mlbt_channel_free(dir2, NULL);
  mlbt_channel_free(dir, NULL);
  mlb_error_free(err);
}

int main(int argc, char** argv) {
  static const mlbt_case cases[] = {
      TEST_CASE(version),        TEST_CASE(status_names),
      TEST_CASE(error_objects),  TEST_CASE(dtypes),
      TEST_CASE(formats),        TEST_CASE(spec_create),
      TEST_CASE(spec_create_errors), TEST_CASE(spec_json),
      TEST_CASE(spec_bad_json),  TEST_CASE(pipe_options),
      TEST_CASE(pipe_runner_argument_errors), TEST_CASE(null_runner),
      TEST_CASE(log_hook),       TEST_CASE(private_channel_dir),
  };
  return RUN_TESTS(argc, argv, cases);
}
