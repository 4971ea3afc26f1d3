// The overhead table's reference plugin: LLVM's plugin inline-advisor hook
// with the stock advisor behind it and no mlbridge, so the size and time of
// libMLBridgeLLVM.so can be compared with the hook alone
// (bench/llvm_overhead.py, docs/llvm-plugin.md).
#include <llvm/Analysis/InlineAdvisor.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Passes/PassBuilder.h>
#if __has_include(<llvm/Plugins/PassPlugin.h>)
#include <llvm/Plugins/PassPlugin.h>  // LLVM 22+
#else
#include <llvm/Passes/PassPlugin.h>
#endif

namespace {

llvm::InlineAdvisor* stockAdvisor(llvm::Module& m, llvm::FunctionAnalysisManager& fam, llvm::InlineParams params,
                                  llvm::InlineContext ic) {
  return new llvm::DefaultInlineAdvisor(m, fam, params, ic);
}

}  // namespace

extern "C" LLVM_ATTRIBUTE_WEAK ::llvm::PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "mlbridge-baseline", "0.1.0", [](llvm::PassBuilder& pb) {
            pb.registerAnalysisRegistrationCallback([](llvm::ModuleAnalysisManager& mam) {
              mam.registerPass([] { return llvm::PluginInlineAdvisorAnalysis(stockAdvisor); });
            });
          }};
}
