// A message of the plugin's through the module's LLVMContext, so opt, clang and
// lld print it their way (`warning: PREFIX: ...`, or `error: ...`, which makes the
// compiler exit non-zero without crashing).
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_PLUGIN_DIAGNOSTIC_H
#define MLBRIDGE_INTEGRATIONS_LLVM_PLUGIN_DIAGNOSTIC_H

#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>

#include <string>

namespace mlbridge_llvm {

class PluginDiagnostic : public llvm::DiagnosticInfo {
 public:
  PluginDiagnostic(const char* prefix, const std::string& msg, llvm::DiagnosticSeverity severity)
      : DiagnosticInfo(kind(), severity), prefix_(prefix), msg_(msg) {}
  void print(llvm::DiagnosticPrinter& dp) const override { dp << prefix_ << ": " << msg_; }

 private:
  static int kind() {
    static const int k = llvm::getNextAvailablePluginDiagnosticKind();
    return k;
  }
  const char* prefix_;
  const std::string& msg_;  // the diagnostic lives only while diagnose() prints it
};

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_PLUGIN_DIAGNOSTIC_H
