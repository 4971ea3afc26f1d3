// Where the phase-ordering pass gets its decisions: the model contract
// (feature and advice specs) and the runner chosen by the options.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_PHASE_ORDERING_RUNNER_H
#define MLBRIDGE_INTEGRATIONS_LLVM_PHASE_ORDERING_RUNNER_H

#include <memory>
#include <string>
#include <vector>

#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"

namespace mlbridge_llvm {

// Tensor names of the contract (docs/phase-ordering.md).
constexpr const char* kPhaseOrderFeaturesName = "module_features";  // int64 [kNumPhaseOrderFeatures]
constexpr const char* kPhaseOrderStepName = "step";                 // int64 [1], 0-based
constexpr const char* kPhaseOrderActionName = "action";             // int64 [1], index into the table

std::vector<mlbridge::TensorSpec> phaseOrderFeatureSpecs();
std::vector<mlbridge::TensorSpec> phaseOrderAdviceSpecs();

struct PhaseOrderRunnerOptions {
  std::string runner;      // "onnx", "aot" or "pipe"
  std::string model;       // onnx: .onnx file; aot: shared library built from mlbridge-aot output
  std::string aotSymbol;   // aot: the generated `<Name>_model` function in that library
  std::string pipe;        // pipe: channel base (BASE.in / BASE.out)
  std::string format;      // pipe: bitstream, json or protobuf
  int timeoutMs = 10000;   // pipe: bound on connecting and on each reply
};

// Creates the runner; every problem (unknown runner, missing file, spec
// mismatch, no peer on the pipe) is an error naming it.
mlbridge::StatusOr<std::unique_ptr<mlbridge::ModelRunner>> createPhaseOrderRunner(const PhaseOrderRunnerOptions& o);

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_PHASE_ORDERING_RUNNER_H
