// The observation of the phase-ordering pass: a fixed-size vector of module
// counts (int64), recomputed after every step. Sent as one tensor so the
// policy sees the whole module at once; docs/phase-ordering.md lists them.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_PHASE_ORDERING_FEATURES_H
#define MLBRIDGE_INTEGRATIONS_LLVM_PHASE_ORDERING_FEATURES_H

#include <cstddef>
#include <cstdint>

namespace llvm {
class Module;
}

namespace mlbridge_llvm {

constexpr size_t kNumPhaseOrderFeatures = 32;

// Name of feature i ("instructions", "loads", ...), in tensor order.
const char* phaseOrderFeatureName(size_t i);

// Index of the total instruction count in the vector (used for traces).
constexpr size_t kPhaseOrderInstructionsFeature = 4;

// Fills out[0..kNumPhaseOrderFeatures) for `m`. One walk over the IR, no allocation.
void computePhaseOrderFeatures(const llvm::Module& m, int64_t* out);

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_PHASE_ORDERING_FEATURES_H
