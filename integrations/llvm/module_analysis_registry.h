// LLVM hands an inline-advisor factory only the FunctionAnalysisManager, but
// MLInlineAdvisor needs the ModuleAnalysisManager. registerModuleAnalysisAnchor
// adds a tiny analysis to each ModuleAnalysisManager the PassBuilder sets up;
// it lives exactly as long as that manager, so findModuleAnalysisManager can
// map a (Module, FunctionAnalysisManager) pair back to its live owner.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_MODULE_ANALYSIS_REGISTRY_H
#define MLBRIDGE_INTEGRATIONS_LLVM_MODULE_ANALYSIS_REGISTRY_H

#include <llvm/IR/PassManager.h>

namespace mlbridge_llvm {

void registerModuleAnalysisAnchor(llvm::ModuleAnalysisManager& mam);

// The manager, registered by this thread, whose function-analysis proxy for
// `m` is `fam`; nullptr if there is none.
llvm::ModuleAnalysisManager* findModuleAnalysisManager(llvm::Module& m, llvm::FunctionAnalysisManager& fam);

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_MODULE_ANALYSIS_REGISTRY_H
