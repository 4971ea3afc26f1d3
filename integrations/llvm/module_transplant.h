// Replaces what a module holds by what another module of the same LLVMContext
// holds, in place: the order policy (pipeline_override.cc) optimizes copies of
// the module, measures each, and puts the winning copy's contents into the
// module clang compiles, instead of running the winning pipeline a second time.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_MODULE_TRANSPLANT_H
#define MLBRIDGE_INTEGRATIONS_LLVM_MODULE_TRANSPLANT_H

#include <memory>

namespace llvm {
class Module;
}

namespace mlbridge_llvm {

// DST's globals, functions, aliases, ifuncs, comdats, named metadata and
// inline asm are dropped; SRC's are moved in, in their order (so DST compiles
// to SRC's object). SRC must be a copy of DST (CloneModule: same context,
// triple and data layout); it is left empty.
void replaceModuleContents(llvm::Module& dst, std::unique_ptr<llvm::Module> src);

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_MODULE_TRANSPLANT_H
