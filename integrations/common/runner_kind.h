// The runner kinds an integration's option may name ("onnx", "pipe", ...),
// parsed in one place for every integration. No mlbridge dependency: the GCC
// plugin, which talks to mlbridge through the C API only, compiles it too.
#ifndef MLBRIDGE_INTEGRATIONS_COMMON_RUNNER_KIND_H
#define MLBRIDGE_INTEGRATIONS_COMMON_RUNNER_KIND_H

#include <string_view>

namespace mlbridge_integrations {

enum class RunnerKind { kOnnx, kAot, kOnnxRuntime, kTfAot, kPipe, kGrpc };

// The option spelling of `kind` ("onnx", "aot", "onnxruntime", "tfaot", "pipe", "grpc").
const char* runnerKindName(RunnerKind kind);

// Exact, case-sensitive match of one spelling; false (and *out untouched)
// for anything else, the empty string included.
bool parseRunnerKind(std::string_view text, RunnerKind* out);

}  // namespace mlbridge_integrations

#endif  // MLBRIDGE_INTEGRATIONS_COMMON_RUNNER_KIND_H
