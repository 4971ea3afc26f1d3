// The one parser of runner kinds every integration uses
// (integrations/common/runner_kind.h).
#include "runner_kind.h"

#include <gtest/gtest.h>

#include <string>

namespace mlbridge_integrations {
namespace {

TEST(RunnerKind, EachValidKindParsesToItself) {
  const struct {
    const char* text;
    RunnerKind kind;
  } kCases[] = {{"onnx", RunnerKind::kOnnx},   {"aot", RunnerKind::kAot},   {"onnxruntime", RunnerKind::kOnnxRuntime},
                {"tfaot", RunnerKind::kTfAot}, {"pipe", RunnerKind::kPipe}, {"grpc", RunnerKind::kGrpc}};
  for (const auto& c : kCases) {
    RunnerKind k = RunnerKind::kGrpc == c.kind ? RunnerKind::kOnnx : RunnerKind::kGrpc;  // anything else
    ASSERT_TRUE(parseRunnerKind(c.text, &k)) << c.text;
    EXPECT_EQ(k, c.kind) << c.text;
    EXPECT_STREQ(runnerKindName(c.kind), c.text);
  }
}

TEST(RunnerKind, EmptyIsRefused) {
  RunnerKind k = RunnerKind::kPipe;
  EXPECT_FALSE(parseRunnerKind("", &k));
  EXPECT_EQ(k, RunnerKind::kPipe);  // untouched
}

TEST(RunnerKind, UnknownAndNearMissesAreRefused) {
  for (const char* text : {"tflite", "ONNX", "Pipe", "onnx ", " onnx", "onn", "onnxr", "pipes", "grpc\n", "aot=x"}) {
    RunnerKind k = RunnerKind::kAot;
    EXPECT_FALSE(parseRunnerKind(text, &k)) << '"' << text << '"';
    EXPECT_EQ(k, RunnerKind::kAot) << text;
  }
  // A string_view that stops before its terminator is compared by its length.
  std::string padded = "pipeline";
  RunnerKind k = RunnerKind::kAot;
  EXPECT_TRUE(parseRunnerKind(std::string_view(padded).substr(0, 4), &k));
  EXPECT_EQ(k, RunnerKind::kPipe);
}

}  // namespace
}  // namespace mlbridge_integrations
