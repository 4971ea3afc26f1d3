// Placeholder until the ML inliner lands.
#include "passes.h"

namespace mlbridge_llvm {
void registerInliner(llvm::PassBuilder&) {}
}  // namespace mlbridge_llvm
