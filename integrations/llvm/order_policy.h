// A phase-ordering policy as the compiler applies it (docs/phase-ordering-policy.md):
// a file from `mlbridge train orders` with a few whole pass orders (a coreset
// learned from `mlbridge tune` searches on training projects), how many to try
// per module, and optionally a model that ranks them from the module's
// features. The pipeline override (pipeline_override.cc) compiles -Oz and the
// chosen orders in-process and keeps the smallest object.
//
// File (JSON): {"format": "mlbridge-order-policy", "version": 1,
//   "llvm_major": 19, "tries": 3, "orders": ["pipeline text", ...],
//   "model": "ranker.onnx"}   ("model" optional, relative to the file)
// Model contract: input "module_features" int64 [32] (phase_ordering_features.h),
// output "order_scores" float [orders]; higher is tried first.
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_ORDER_POLICY_H
#define MLBRIDGE_INTEGRATIONS_LLVM_ORDER_POLICY_H

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Support/Error.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Module;
}  // namespace llvm

namespace mlbridge {
class ModelRunner;
}

namespace mlbridge_llvm {

constexpr const char* kOrderPolicyFormat = "mlbridge-order-policy";
constexpr int64_t kOrderPolicyVersion = 1;
constexpr const char* kOrderScoresName = "order_scores";
// more orders than this is not a policy `mlbridge train orders` wrote
constexpr size_t kMaxPolicyOrders = 4096;

// Parses a textual pipeline the way the caller's PassBuilder does (and keeps
// its tuning options as they were: pipeline_override.cc's OverrideState::parse).
using PipelineParser = llvm::function_ref<llvm::Error(llvm::ModulePassManager&, llvm::StringRef)>;

class OrderPolicy {
 public:
  // Reads and checks PATH (every pipeline parsed by PARSE, the model loaded).
  // Never fails hard: error() says why the file is refused.
  static std::unique_ptr<OrderPolicy> load(const std::string& path, PipelineParser parse);
  ~OrderPolicy();

  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }
  const std::vector<std::string>& orders() const { return orders_; }
  unsigned tries() const { return tries_; }
  bool hasModel() const { return runner_ != nullptr; }

  // Indices of the orders to try for M, best first: the first `tries` by the
  // model's scores (ties by index), or the file's first `tries` without a
  // model. False with *error when the model fails on this module.
  bool choose(const llvm::Module& m, unsigned tries, std::vector<size_t>* out, std::string* error);

 private:
  OrderPolicy() = default;
  std::string path_;
  std::string error_;
  std::vector<std::string> orders_;
  unsigned tries_ = 0;
  std::unique_ptr<mlbridge::ModelRunner> runner_;
};

}  // namespace mlbridge_llvm

#endif  // MLBRIDGE_INTEGRATIONS_LLVM_ORDER_POLICY_H
