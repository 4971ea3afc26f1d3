#include "inline_training_log.h"

#include <llvm/Analysis/InlineModelFeatureMaps.h>
#include <llvm/Analysis/Utils/TrainingLogger.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <utility>

namespace mlbridge_llvm {

InlineTrainingLog::InlineTrainingLog(std::string path, size_t numFeatures)
    : path_(std::move(path)), numFeatures_(numFeatures) {}

std::unique_ptr<InlineTrainingLog> InlineTrainingLog::open(const std::string& path,
                                                           const std::vector<llvm::TensorSpec>& features,
                                                           std::string* error) {
  std::error_code ec;
  auto os = std::make_unique<llvm::raw_fd_ostream>(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    *error = "cannot create the training log " + path + ": " + ec.message();
    return nullptr;
  }
  std::unique_ptr<InlineTrainingLog> log(new InlineTrainingLog(path, features.size()));
  log->stream_ = os.get();
  // LLVM's development-mode layout: features, then the default decision,
  // then the decision taken; int64 delta_size score after each observation.
  std::vector<llvm::TensorSpec> specs(features);
  specs.push_back(llvm::DefaultDecisionSpec);
  specs.push_back(llvm::InlineDecisionSpec);
  log->logger_ = std::make_unique<llvm::Logger>(std::move(os), specs,
                                                llvm::TensorSpec::createSpec<int64_t>(llvm::RewardName, {1}),
                                                /*IncludeReward=*/true, llvm::InlineDecisionSpec);
  log->logger_->switchContext("");
  return log;
}

InlineTrainingLog::~InlineTrainingLog() {
  // raw_fd_ostream's destructor ends the process on an unhandled write error:
  // report it here and clear it, the compilation itself is not affected.
  stream_->flush();
  if (stream_->has_error()) {
    llvm::errs() << "mlbridge: warning: ML inliner: writing the training log " << path_
                 << " failed: " << stream_->error().message() << "; the log is incomplete\n";
    stream_->clear_error();
  }
  logger_.reset();
}

void InlineTrainingLog::log(const llvm::MLModelRunner& runner, bool defaultDecision, bool decision) {
  const int64_t stock = defaultDecision ? 1 : 0;
  const int64_t taken = decision ? 1 : 0;
  const int64_t score = 0;  // the module's reward goes into the last one, after compilation
  logger_->startObservation();
  for (size_t i = 0; i < numFeatures_; ++i)
    logger_->logTensorValue(i, static_cast<const char*>(runner.getTensorUntyped(i)));
  logger_->logTensorValue(numFeatures_, reinterpret_cast<const char*>(&stock));
  logger_->logTensorValue(numFeatures_ + 1, reinterpret_cast<const char*>(&taken));
  logger_->endObservation();
  logger_->logReward(score);
  ++observations_;
}

}  // namespace mlbridge_llvm
