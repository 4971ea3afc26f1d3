#include "pass_builder_access.h"

#include <llvm/Passes/PassBuilder.h>

namespace mlbridge_llvm {
namespace {

// PassBuilder has no getters for these (LLVM 19, 22). An explicit template
// instantiation may name a private member: the standard-conforming way to
// read them without patching LLVM.
template <typename Tag, typename Tag::type Member>
struct Expose {
  friend typename Tag::type memberOf(Tag) { return Member; }
};
struct PassBuilderTM {
  using type = llvm::TargetMachine* llvm::PassBuilder::*;
  friend type memberOf(PassBuilderTM);
};
struct PassBuilderPTO {
  using type = llvm::PipelineTuningOptions llvm::PassBuilder::*;
  friend type memberOf(PassBuilderPTO);
};
template struct Expose<PassBuilderTM, &llvm::PassBuilder::TM>;
template struct Expose<PassBuilderPTO, &llvm::PassBuilder::PTO>;

}  // namespace

llvm::TargetMachine* targetMachineOf(llvm::PassBuilder& pb) { return pb.*memberOf(PassBuilderTM()); }
llvm::PipelineTuningOptions& tuningOptionsOf(llvm::PassBuilder& pb) { return pb.*memberOf(PassBuilderPTO()); }

}  // namespace mlbridge_llvm
