// Which mlbridge runner the ML inliner asks, chosen by plugin options
// (`-mlbridge-inline-*`, also `-mllvm -mlbridge-inline-*` under clang) or,
// when an option is not given, by MLBRIDGE_INLINE_* environment variables.
// docs/llvm-plugin.md lists them.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_INLINE_RUNNER_H
#define MLBRIDGE_INTEGRATIONS_LLVM_INLINE_RUNNER_H

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "runner_choice.h"

namespace mlbridge_llvm {

using mlbridge_integrations::createRunner;
using mlbridge_integrations::RunnerChoice;

struct InlineRunnerConfig {
  RunnerChoice choice;   // runner "" / "none": the stock inliner
  bool stats = false;    // print how many decisions the model made
  std::string trainingLog;  // "": no training log (docs/training-logs.md)
  // The answer (the runner's; the stock heuristic's without one) is inverted
  // at these query indices (0-based, in the order the advisor is asked). The
  // primitive of search-based training (docs/training.md).
  std::vector<uint64_t> flips;  // sorted, unique
  std::string flipsError;       // the option could not be read: warn, use the stock inliner
  // Per callee, the answer for every call site of it (1 inline, 0 not), over
  // whatever else decided: joint decisions ("inline all calls of f, so f can
  // go"), the primitive of the room search (docs/training.md). Read from a
  // file of `NAME<TAB>0|1` lines; NAME `*` answers for every callee not listed.
  std::unordered_map<std::string, bool> callees;
  bool calleesGiven = false;    // a file was named (it may list no callee)
  std::string calleesError;     // the file could not be read: warn, use the stock inliner
  // Append `caller<TAB>callee<TAB>answer` per query to this file ("": none).
  std::string trace;

  bool hasRunner() const { return !choice.runner.empty() && choice.runner != "none"; }
  // A training log or flips without a runner: the stock heuristic decides
  // (LLVM's development mode without a model), and is logged or flipped.
  bool enabled() const {
    return hasRunner() || !trainingLog.empty() || !flips.empty() || !flipsError.empty() || calleesGiven || !trace.empty();
  }
};

// The options as given now (command line first, then the environment).
InlineRunnerConfig inlineRunnerConfig();

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_INLINE_RUNNER_H
