// LiteRtModelRunner's failure paths that need no LiteRT: a missing library, a
// library without LiteRT's C API. Real models: tests/tfaot (ctest label tf).
#include <gtest/gtest.h>

#include "mlbridge/litert_runner.h"

namespace mlbridge {
namespace {

std::vector<TensorSpec> features() { return {TensorSpec::create<float>("x", {1, 16})}; }
std::vector<TensorSpec> advice() { return {TensorSpec::create<float>("probs", {1, 4})}; }

TEST(LiteRtRunner, MissingLibraryNamesTheFix) {
  LiteRtRunnerOptions o;
  o.library = "/nonexistent/libLiteRt.so";
  auto r = LiteRtModelRunner::create("model.tflite", features(), advice(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("get-litert.sh"), std::string::npos) << r.status().message();
}

TEST(LiteRtRunner, LibraryWithoutTheApiIsRefused) {
  LiteRtRunnerOptions o;
  o.library = "libm.so.6";  // loads, but is not LiteRT
  auto r = LiteRtModelRunner::create("model.tflite", features(), advice(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("LiteRtCreateEnvironment"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(LiteRtModelRunner::pinnedVersion()), std::string::npos);
}

TEST(LiteRtRunner, BadSpecsAreRefusedBeforeLoading) {
  auto r = LiteRtModelRunner::create("model.tflite", features(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mlbridge
