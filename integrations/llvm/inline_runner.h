// Which mlbridge runner the ML inliner asks, chosen by plugin options
// (`-mlbridge-inline-*`, also `-mllvm -mlbridge-inline-*` under clang) or,
// when an option is not given, by MLBRIDGE_INLINE_* environment variables.
// docs/llvm-plugin.md lists them.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_INLINE_RUNNER_H
#define MLBRIDGE_INTEGRATIONS_LLVM_INLINE_RUNNER_H

#include <string>

#include "runner_choice.h"

namespace mlbridge_llvm {

using mlbridge_integrations::createRunner;
using mlbridge_integrations::RunnerChoice;

struct InlineRunnerConfig {
  RunnerChoice choice;   // runner "" / "none": the stock inliner
  bool stats = false;    // print how many decisions the model made
  std::string trainingLog;  // "": no training log (docs/training-logs.md)

  bool hasRunner() const { return !choice.runner.empty() && choice.runner != "none"; }
  // A training log without a runner logs the stock heuristic's decisions
  // (LLVM's development mode without a model).
  bool enabled() const { return hasRunner() || !trainingLog.empty(); }
};

// The options as given now (command line first, then the environment).
InlineRunnerConfig inlineRunnerConfig();

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_INLINE_RUNNER_H
