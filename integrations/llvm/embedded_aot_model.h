// The AOT-compiled inlining policy linked into this plugin, if any
// (CMake: -DMLBRIDGE_LLVM_AOT_MODEL=policy.onnx, or the MLBridgeLLVMAot target).
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_EMBEDDED_AOT_MODEL_H
#define MLBRIDGE_INTEGRATIONS_LLVM_EMBEDDED_AOT_MODEL_H

#include "mlbridge/aot_model.h"

namespace mlbridge_llvm {

// nullptr when the plugin was built without an AOT model.
const mlbridge_aot_model* embeddedInlinerModel();

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_EMBEDDED_AOT_MODEL_H
