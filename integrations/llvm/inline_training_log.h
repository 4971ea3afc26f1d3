// The ML inliner's training log, in LLVM's own training-log format: written
// by LLVM's own llvm::Logger (llvm/Analysis/Utils/TrainingLogger.h, exported
// by libLLVM), laid out as LLVM's development-mode inliner lays it out:
//   header: the 38 FeatureMap features, then `inlining_default` (the stock
//           heuristic's decision) and `inlining_decision` (the decision
//           taken), score `delta_size` int64[1], advice `inlining_decision`;
//   context "" (the module); then per call site the model was asked about,
//   one observation and one outcome with score 0.
// The module's reward is known only after compilation: the tool that measures
// it rewrites the last outcome in place (mlbridge.llvm.logs.set_log_reward;
// docs/training-logs.md). Only built when a log is asked for: no cost otherwise.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_INLINE_TRAINING_LOG_H
#define MLBRIDGE_INTEGRATIONS_LLVM_INLINE_TRAINING_LOG_H

#include <llvm/Analysis/MLModelRunner.h>
#include <llvm/Analysis/TensorSpec.h>

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Logger;
class raw_fd_ostream;
}  // namespace llvm

namespace mlbridge_llvm {

class InlineTrainingLog {
 public:
  // Creates (truncates) `path` and writes the header and the context line.
  // `features` are the runner's inputs in index order. nullptr and `*error`
  // when the file cannot be created.
  static std::unique_ptr<InlineTrainingLog> open(const std::string& path, const std::vector<llvm::TensorSpec>& features,
                                                 std::string* error);
  // Flushes; a write error (disk full) is reported once on errs(), never fatal.
  ~InlineTrainingLog();
  InlineTrainingLog(const InlineTrainingLog&) = delete;
  InlineTrainingLog& operator=(const InlineTrainingLog&) = delete;

  // One observation: the runner's current feature buffers, the stock
  // heuristic's decision and the decision taken; then its outcome, score 0.
  void log(const llvm::MLModelRunner& runner, bool defaultDecision, bool decision);

  size_t observations() const { return observations_; }

 private:
  InlineTrainingLog(std::string path, size_t numFeatures);

  std::string path_;
  size_t numFeatures_;
  llvm::raw_fd_ostream* stream_ = nullptr;  // owned by logger_
  std::unique_ptr<llvm::Logger> logger_;
  size_t observations_ = 0;
};

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_INLINE_TRAINING_LOG_H
