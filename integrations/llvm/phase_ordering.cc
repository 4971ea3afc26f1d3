// Placeholder until the phase-ordering pass lands.
#include "passes.h"

namespace mlbridge_llvm {
void registerPhaseOrdering(llvm::PassBuilder&) {}
}  // namespace mlbridge_llvm
