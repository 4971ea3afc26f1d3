// The checks of a runner's feature and advice specs that every runner kind
// makes before anything else (ModelRunner::initBuffers for the channel
// runners; the in-process runners' create, before binding to their model),
// so every kind refuses the same specs with the same message.
#ifndef MLBRIDGE_SRC_RUNNER_SPECS_H
#define MLBRIDGE_SRC_RUNNER_SPECS_H

#include <vector>

#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"

namespace mlbridge {

// Each list valid with unique names (validateSpecs), and at least one advice.
inline Status checkRunnerSpecs(const std::vector<TensorSpec>& features, const std::vector<TensorSpec>& advice) {
  MLBRIDGE_RETURN_IF_ERROR(validateSpecs(features, "feature"));
  MLBRIDGE_RETURN_IF_ERROR(validateSpecs(advice, "advice"));
  if (advice.empty()) return invalidArgument("a runner needs at least one output (advice) spec");
  return Status::OK();
}

}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_RUNNER_SPECS_H
