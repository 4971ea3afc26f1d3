// The phase-ordering pass's model contract (feature and advice specs); the
// runner comes from runner_choice.h like every pass's.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_PHASE_ORDERING_RUNNER_H
#define MLBRIDGE_INTEGRATIONS_LLVM_PHASE_ORDERING_RUNNER_H

#include <memory>
#include <string>
#include <vector>

#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"
#include "runner_choice.h"

namespace mlbridge_llvm {

using mlbridge_integrations::createRunner;
using mlbridge_integrations::RunnerChoice;

// Tensor names of the contract (docs/phase-ordering.md).
constexpr const char* kPhaseOrderFeaturesName = "module_features";  // int64 [kNumPhaseOrderFeatures]
constexpr const char* kPhaseOrderStepName = "step";                 // int64 [1], 0-based
constexpr const char* kPhaseOrderActionName = "action";             // int64 [1], index into the table

std::vector<mlbridge::TensorSpec> phaseOrderFeatureSpecs();
std::vector<mlbridge::TensorSpec> phaseOrderAdviceSpecs();

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_PHASE_ORDERING_RUNNER_H
