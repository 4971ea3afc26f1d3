// Entry point of the mlbridge LLVM pass plugin:
//   opt -load-pass-plugin=libMLBridgeLLVM.so ...
//   clang -fpass-plugin=libMLBridgeLLVM.so ...
#include <llvm/Config/llvm-config.h>
#include <llvm/Passes/PassBuilder.h>
#if __has_include(<llvm/Plugins/PassPlugin.h>)
#include <llvm/Plugins/PassPlugin.h>  // LLVM 22+
#else
#include <llvm/Passes/PassPlugin.h>
#endif

#include "passes.h"

extern "C" LLVM_ATTRIBUTE_WEAK ::llvm::PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "mlbridge", "0.1.0", [](llvm::PassBuilder& pb) {
            mlbridge_llvm::registerInliner(pb);
            mlbridge_llvm::registerPhaseOrdering(pb);
            mlbridge_llvm::registerPipelineOverride(pb);
          }};
}
