// `mlbridge-unroll`: an MLIR pass that asks an mlbridge model how far to
// unroll each scf.for and affine.for, and unrolls them. docs/mlir.md is the guide.
#ifndef MLBRIDGE_INTEGRATIONS_MLIR_UNROLL_PASS_H
#define MLBRIDGE_INTEGRATIONS_MLIR_UNROLL_PASS_H

#include <memory>

namespace mlir {
class Pass;
}

namespace mlbridge_mlir {

// The pass with default options (set them through the pass pipeline text:
// --mlbridge-unroll="runner=onnx model=policy.onnx").
std::unique_ptr<mlir::Pass> createUnrollPass();
// Makes --mlbridge-unroll known to mlir-opt style tools.
void registerUnrollPass();

}  // namespace mlbridge_mlir

#endif  // MLBRIDGE_INTEGRATIONS_MLIR_UNROLL_PASS_H
