#include "runner_kind.h"

namespace mlbridge_integrations {

namespace {
constexpr RunnerKind kAll[] = {RunnerKind::kOnnx,  RunnerKind::kAot,  RunnerKind::kOnnxRuntime,
                               RunnerKind::kTfAot, RunnerKind::kPipe, RunnerKind::kGrpc};
}  // namespace

const char* runnerKindName(RunnerKind kind) {
  switch (kind) {
    case RunnerKind::kOnnx: return "onnx";
    case RunnerKind::kAot: return "aot";
    case RunnerKind::kOnnxRuntime: return "onnxruntime";
    case RunnerKind::kTfAot: return "tfaot";
    case RunnerKind::kPipe: return "pipe";
    case RunnerKind::kGrpc: return "grpc";
  }
  return "";
}

bool parseRunnerKind(std::string_view text, RunnerKind* out) {
  // The names are the spellings: parsing cannot drift from printing.
  for (RunnerKind k : kAll)
    if (text == runnerKindName(k)) {
      *out = k;
      return true;
    }
  return false;
}

}  // namespace mlbridge_integrations
