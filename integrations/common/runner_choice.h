// The one place the compiler integrations (the LLVM plugin's ML inliner and
// phase ordering, the MLIR pass) turn their options into an mlbridge runner,
// so every pass offers the same runners with the same meaning and errors.
// Compiled into each target with MLBRIDGE_RUNNERS_HAVE_{ENGINE,ONNXRUNTIME,
// GRPC} saying what that target links.
#ifndef MLBRIDGE_INTEGRATIONS_COMMON_RUNNER_CHOICE_H
#define MLBRIDGE_INTEGRATIONS_COMMON_RUNNER_CHOICE_H

#include <memory>
#include <string>
#include <vector>

#include "mlbridge/aot_model.h"
#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"

namespace mlbridge_integrations {

struct RunnerChoice {
  std::string runner;     // onnx, aot, onnxruntime, tfaot, pipe, grpc
  std::string model;      // onnx, onnxruntime: .onnx file; aot: shared library built from
                          // mlbridge-aot output (empty: the policy compiled into the plugin);
                          // tfaot: library from mlbridge_add_tf_aot_model(... MODULE)
  std::string aotSymbol;  // aot library: its generated `<Name>_model` function
  std::string tfaotSymbol;  // tfaot library: its generated `<NAME>_tfaot_model` function
  std::string channel;    // pipe: channel base (BASE.in / BASE.out)
  std::string format;     // pipe: bitstream (default), json, protobuf
  std::string address;    // grpc: host:port
  int timeoutMs = 10000;  // pipe, grpc: bound on connecting and on each decision
  std::string clientName = "mlbridge-llvm";           // grpc: reported to the model server
  const mlbridge_aot_model* embeddedAot = nullptr;     // aot without a library: the compiled-in policy
  std::string optionPrefix = "-mlbridge-";             // for messages: "-mlbridge-inline-", "-mlbridge-po-"
};

// Creates the chosen runner for `features` -> `advice`. Every problem (unknown
// runner, runner not built in, missing file, spec mismatch, no peer) is an
// error naming it and the option that fixes it.
mlbridge::StatusOr<std::unique_ptr<mlbridge::ModelRunner>> createRunner(const RunnerChoice& choice,
                                                                        std::vector<mlbridge::TensorSpec> features,
                                                                        std::vector<mlbridge::TensorSpec> advice);

// The runners this plugin can create, e.g. "onnx, aot, tfaot, pipe".
std::string availableRunners();

}  // namespace mlbridge_integrations

#endif  // MLBRIDGE_INTEGRATIONS_COMMON_RUNNER_CHOICE_H
