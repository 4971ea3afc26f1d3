// What a PassBuilder keeps private but a plugin needs to match clang exactly:
// its TargetMachine (clang's own, with its code-generation options) and its
// PipelineTuningOptions. Parsing "default<Oz>" rewrites the latter with opt's
// choices (no SLP vectorizer at Oz; clang runs it), so a plugin that parses
// such pipelines and then wants clang's -Oz restores clang's options first.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_PASS_BUILDER_ACCESS_H
#define MLBRIDGE_INTEGRATIONS_LLVM_PASS_BUILDER_ACCESS_H

namespace llvm {
class PassBuilder;
class PipelineTuningOptions;
class TargetMachine;
}  // namespace llvm

namespace mlbridge_llvm {

// Null when the PassBuilder has none (opt without a target triple).
llvm::TargetMachine* targetMachineOf(llvm::PassBuilder& pb);
llvm::PipelineTuningOptions& tuningOptionsOf(llvm::PassBuilder& pb);

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_PASS_BUILDER_ACCESS_H
