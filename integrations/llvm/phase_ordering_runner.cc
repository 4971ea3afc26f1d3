#include "phase_ordering_runner.h"

#include "phase_ordering_features.h"

namespace mlbridge_llvm {

using mlbridge::TensorSpec;

std::vector<TensorSpec> phaseOrderFeatureSpecs() {
  return {TensorSpec::create<int64_t>(kPhaseOrderFeaturesName, {int64_t(kNumPhaseOrderFeatures)}),
          TensorSpec::create<int64_t>(kPhaseOrderStepName, {1})};
}

std::vector<TensorSpec> phaseOrderAdviceSpecs() { return {TensorSpec::create<int64_t>(kPhaseOrderActionName, {1})}; }

}  // namespace mlbridge_llvm
