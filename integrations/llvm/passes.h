// The passes the mlbridge LLVM plugin offers; plugin.cc registers them all.
// Each pass lives in its own file and is registered by one function here.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_PASSES_H
#define MLBRIDGE_INTEGRATIONS_LLVM_PASSES_H

namespace llvm {
class PassBuilder;
}

namespace mlbridge_llvm {

// ML inliner: LLVM's MLInlineAdvisor backed by any mlbridge runner (inliner.cc).
void registerInliner(llvm::PassBuilder& pb);

// POSET-RL style phase ordering: the model picks pass subsequences (phase_ordering.cc).
void registerPhaseOrdering(llvm::PassBuilder& pb);

// A pass order in place of clang's -O pipeline, per source file from a tuning
// file or one for every module (pipeline_override.cc, docs/tuning.md).
void registerPipelineOverride(llvm::PassBuilder& pb);

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_PASSES_H
