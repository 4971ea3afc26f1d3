// Which mlbridge runner the ML inliner asks, chosen by plugin options
// (`-mlbridge-inline-*`, also `-mllvm -mlbridge-inline-*` under clang) or,
// when an option is not given, by MLBRIDGE_INLINE_* environment variables.
// docs/llvm-plugin.md lists them.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_INLINE_RUNNER_H
#define MLBRIDGE_INTEGRATIONS_LLVM_INLINE_RUNNER_H

#include <memory>
#include <string>
#include <vector>

#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"

namespace mlbridge_llvm {

struct InlineRunnerConfig {
  std::string runner;    // "" / "none" (stock inliner), onnx, aot, onnxruntime, pipe, grpc
  std::string model;     // .onnx file (onnx, onnxruntime)
  std::string channel;   // pipe: channel base (BASE.in / BASE.out)
  std::string format;    // pipe: bitstream (default), json, protobuf
  std::string address;   // grpc: host:port
  int timeoutMs = 10000; // bound on each remote decision and on connecting
  bool stats = false;    // print how many decisions the model made

  bool enabled() const { return !runner.empty() && runner != "none"; }
};

// The options as given now (command line first, then the environment).
InlineRunnerConfig inlineRunnerConfig();

// Creates the runner `config` names, taking `features` and answering `advice`.
// Errors say what is wrong (unknown runner, missing file, runner not built in).
mlbridge::StatusOr<std::unique_ptr<mlbridge::ModelRunner>> createInlineRunner(
    const InlineRunnerConfig& config, std::vector<mlbridge::TensorSpec> features, mlbridge::TensorSpec advice);

// The runners this plugin was built with, e.g. "onnx, aot, pipe".
std::string availableInlineRunners();

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_INLINE_RUNNER_H
