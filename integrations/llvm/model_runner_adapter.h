// MLBridgeModelRunner: any mlbridge::ModelRunner seen as an llvm::MLModelRunner,
// so LLVM's own ML advisors (MLInlineAdvisor, ...) can use every mlbridge
// runner: the built-in ONNX engine, AOT models, ONNX Runtime, pipes, gRPC.
//
// Zero copy: LLVM's input buffers are the mlbridge runner's input buffers
// (matched by name; dtype and shape must be equal), and evaluateUntyped()
// returns the runner's output buffer.
//
// Errors never reach the compiler as a crash: the first failed evaluate() is
// reported once on errs(), the runner is then marked failed and every later
// evaluation returns the zero-filled fallback value (for the inliner: "do not
// inline") without asking the model again. Callers that know a better
// fallback (the stock heuristic) check failed() after evaluate<T>().
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_MODEL_RUNNER_ADAPTER_H
#define MLBRIDGE_INTEGRATIONS_LLVM_MODEL_RUNNER_ADAPTER_H

#include <llvm/Analysis/MLModelRunner.h>
#include <llvm/Analysis/TensorSpec.h>

#include <memory>
#include <string>
#include <vector>

#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"

namespace mlbridge_llvm {

// LLVM's tensor spec as mlbridge's (same name, dtype, shape, port).
mlbridge::TensorSpec toMLBridgeSpec(const llvm::TensorSpec& spec);
std::vector<mlbridge::TensorSpec> toMLBridgeSpecs(const std::vector<llvm::TensorSpec>& specs);

class MLBridgeModelRunner final : public llvm::MLModelRunner {
 public:
  // `inputs` are LLVM's features in LLVM's index order, `output` the advice.
  // A feature the runner does not take gets a private buffer (written,
  // never read); a feature with another dtype or shape, or an output that
  // differs from `output`, is an error. `what` names the runner in messages.
  static mlbridge::StatusOr<std::unique_ptr<MLBridgeModelRunner>> create(
      llvm::LLVMContext& ctx, std::unique_ptr<mlbridge::ModelRunner> runner,
      const std::vector<llvm::TensorSpec>& inputs, const llvm::TensorSpec& output, std::string what);

  void switchContext(llvm::StringRef name) override;

  // True once an evaluation failed; error() says why.
  bool failed() const { return !error_.ok(); }
  const mlbridge::Status& error() const { return error_; }
  size_t evaluations() const { return evaluations_; }

 private:
  MLBridgeModelRunner(llvm::LLVMContext& ctx, std::unique_ptr<mlbridge::ModelRunner> runner, size_t numInputs,
                      size_t outputBytes, std::string what);
  void* evaluateUntyped() override;
  void fail(const mlbridge::Status& s);

  std::unique_ptr<mlbridge::ModelRunner> runner_;
  std::unique_ptr<unsigned char[]> fallback_;  // zeros, the answer after a failure
  std::string what_;
  mlbridge::Status error_;
  size_t evaluations_ = 0;
};

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_MODEL_RUNNER_ADAPTER_H
