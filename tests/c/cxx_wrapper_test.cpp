// The header-only C++ wrapper (mlbridge/mlbridge_cxx.hpp) over the C ABI,
// built with -fno-exceptions -fno-rtti, against a fake bitstream model.
#include "c_test.h"
#include "mlbridge/mlbridge_cxx.hpp"

#include <string>
#include <vector>

namespace {

TEST(specs_and_errors) {
  mlb::Error err;
  mlb::Spec s = mlb::Spec::of<float>("w", {2, 3}, &err);
  REQUIRE(s);
  CHECK(err.ok());
  CHECK(s.name() == "w");
  CHECK_INT_EQ(MLB_DTYPE_FLOAT32, s.dtype());
  CHECK(s.dims() == std::vector<int64_t>({2, 3}));
  CHECK(s.toJson() == "{\"name\":\"w\",\"type\":\"float\",\"port\":0,\"shape\":[2,3]}");
  mlb::Spec copy = s;  // clones
  CHECK(copy && copy.get() != s.get() && mlb_spec_equal(copy.get(), s.get()));
  mlb::Spec parsed = mlb::Spec::fromJson(s.toJson(), &err);
  CHECK(parsed && mlb_spec_equal(parsed.get(), s.get()));
  mlb::Spec bad = mlb::Spec::fromJson("{\"name\":", &err);
  CHECK(!bad);
  CHECK_INT_EQ(MLB_DATA_LOSS, err.code());
  CHECK(err.toString().find("DATA_LOSS: ") == 0);
  mlb::Spec neg = mlb::Spec::create("n", MLB_DTYPE_INT8, {-1}, &err);
  CHECK(!neg);
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, err.code());

  mlb::PipeOptions bad_options;
  bad_options.timeoutMs(-1).base("/x/chan");  // the first error is kept
  CHECK_INT_EQ(MLB_INVALID_ARGUMENT, bad_options.status());
  std::vector<mlb::Spec> f;
  f.push_back(mlb::Spec::of<int64_t>("x", {1}));
  mlb::Runner r = mlb::Runner::pipe(f, f, bad_options, &err);
  CHECK(!r);
  CHECK(std::string(err.message()).find("positive") != std::string::npos);
}

TEST(round_trip) {
  char* dir = nullptr;
  char* base = nullptr;
  REQUIRE(mlbt_channel_new(&dir, &base) && mlbt_make_fifos(base));
  // x int64[1], w float[2] -> decision int64[1], probs float[2]: the echo
  // model returns the 16 feature bytes as the 16 advice bytes.
  pid_t model = mlbt_fake_model_start(base, MLBT_ECHO, 16, 16);
  REQUIRE(model > 0);
  {
    mlb::Error err;
    mlb::PipeOptions opts;
    opts.base(base).format(MLB_FORMAT_BITSTREAM).timeoutMs(5000).connectTimeoutMs(5000);
    std::vector<mlb::Spec> features, advice;
    features.push_back(mlb::Spec::of<int64_t>("x", {1}));
    features.push_back(mlb::Spec::of<float>("w", {2}));
    advice.push_back(mlb::Spec::of<int64_t>("decision", {1}));
    advice.push_back(mlb::Spec::of<float>("probs", {2}));
    mlb::Runner r = mlb::Runner::pipe(features, advice, opts, &err);
    if (!r) fprintf(stderr, "%s\n", err.toString().c_str());
    REQUIRE(r);
    CHECK_INT_EQ(MLB_OK, r.set<int64_t>("x", 42));
    CHECK_INT_EQ(MLB_OK, r.set("w", std::vector<float>{0.5f, -1.5f}));
    CHECK_INT_EQ(MLB_OK, r.evaluate());
    int64_t decision = 0;
    std::vector<float> probs;
    CHECK_INT_EQ(MLB_OK, r.output(0, &decision));
    CHECK_INT_EQ(42, decision);
    CHECK_INT_EQ(MLB_OK, r.output(1, &probs));
    CHECK(probs == std::vector<float>({0.5f, -1.5f}));
    // Wrong dtypes are errors with a message, never reinterpretations.
    double wrong = 0;
    CHECK_INT_EQ(MLB_INVALID_ARGUMENT, r.output(0, &wrong));
    CHECK(std::string(r.lastError()).find("decision") != std::string::npos);
    CHECK(r.input<double>(0) == nullptr);
    CHECK_INT_EQ(MLB_NOT_FOUND, r.set<int64_t>("nope", 1));
    // Zero-copy input.
    size_t n = 0;
    int64_t* x = r.input<int64_t>(0, &n);
    REQUIRE(x != nullptr);
    CHECK_INT_EQ(1, n);
    *x = -7;
    CHECK_INT_EQ(MLB_OK, r.evaluate());
    CHECK_INT_EQ(MLB_OK, r.outputByName("decision", &decision));
    CHECK_INT_EQ(-7, decision);
    // Moving transfers ownership.
    mlb::Runner moved = std::move(r);
    CHECK(!r && moved);
    CHECK_INT_EQ(MLB_OK, moved.finish());
  }
  mlbt_kill(model);
  mlbt_channel_free(dir, base);
}

}  // namespace

int main(int argc, char** argv) {
  static const mlbt_case cases[] = {
      TEST_CASE(specs_and_errors),
      TEST_CASE(round_trip),
  };
  return RUN_TESTS(argc, argv, cases);
}
