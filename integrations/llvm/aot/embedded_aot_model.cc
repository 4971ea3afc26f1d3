// Compiled once per plugin target. With MLBRIDGE_LLVM_AOT_HEADER ("Name.h")
// and MLBRIDGE_LLVM_AOT_MODEL_FN (Name_model) defined, the target links the
// code mlbridge-aot generated for that model (llvm.cmake).
#include "embedded_aot_model.h"

#ifdef MLBRIDGE_LLVM_AOT_HEADER
#include MLBRIDGE_LLVM_AOT_HEADER
#endif

namespace mlbridge_llvm {

const mlbridge_aot_model* embeddedInlinerModel() {
#ifdef MLBRIDGE_LLVM_AOT_MODEL_FN
  return MLBRIDGE_LLVM_AOT_MODEL_FN();
#else
  return nullptr;
#endif
}

}  // namespace mlbridge_llvm
