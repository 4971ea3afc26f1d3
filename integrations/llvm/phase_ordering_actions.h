// The action space of the phase-ordering pass: a fixed table of pass
// subsequences (POSET-RL style groups of -Oz passes), as textual new-PM
// pipelines. The model's `action` is an index into this table.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_PHASE_ORDERING_ACTIONS_H
#define MLBRIDGE_INTEGRATIONS_LLVM_PHASE_ORDERING_ACTIONS_H

#include <cstddef>

namespace mlbridge_llvm {

struct PhaseOrderAction {
  const char* name;      // short label for traces and docs
  const char* pipeline;  // module-level textual pipeline (PassBuilder::parsePassPipeline)
};

constexpr size_t kNumPhaseOrderActions = 15;

// The table; entry i is action i. Stable: trained policies index into it.
const PhaseOrderAction* phaseOrderActions();

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_PHASE_ORDERING_ACTIONS_H
