#include "order_policy.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "mlbridge/model_runner.h"
#include "mlbridge/tensor_spec.h"
#include "phase_ordering_features.h"
#include "phase_ordering_runner.h"
#include "plugin_file.h"

namespace mlbridge_llvm {
namespace {

constexpr uint64_t kMaxFileBytes = 64ull << 20;

std::string readInto(const std::string& path, PipelineParser parse, std::vector<std::string>* orders,
                     unsigned* tries, std::string* model) {
  llvm::json::Value value(nullptr);
  std::string refused = readPluginFile(
      path, {kOrderPolicyFormat, "an order policy", kOrderPolicyVersion, "train it again", kMaxFileBytes}, &value);
  if (!refused.empty()) return refused;
  const llvm::json::Object* root = value.getAsObject();
  const llvm::json::Array* list = root->getArray("orders");
  if (!list || list->empty()) return "damaged (no \"orders\" list)";
  if (list->size() > kMaxPolicyOrders)
    return "it has " + std::to_string(list->size()) + " orders (limit " + std::to_string(kMaxPolicyOrders) + ")";
  for (size_t i = 0; i < list->size(); ++i) {
    std::optional<llvm::StringRef> text = (*list)[i].getAsString();
    if (!text) return "damaged (order " + std::to_string(i) + " is not a pipeline string)";
    llvm::ModulePassManager check;
    if (llvm::Error e = parse(check, *text))
      return "order " + std::to_string(i) + " does not parse with this LLVM: " + llvm::toString(std::move(e));
    orders->push_back(text->str());
  }
  std::optional<int64_t> t = root->getInteger("tries");
  if (!t || *t < 0 || *t > static_cast<int64_t>(list->size()))
    return "damaged (\"tries\" must be 0.." + std::to_string(list->size()) + ")";
  *tries = static_cast<unsigned>(*t);
  if (std::optional<llvm::StringRef> m = root->getString("model")) {
    llvm::SmallString<256> p(*m);
    if (!llvm::sys::path::is_absolute(p)) {
      p = llvm::sys::path::parent_path(path);
      llvm::sys::path::append(p, *m);
    }
    *model = std::string(p.str());
  }
  return "";
}

}  // namespace

OrderPolicy::~OrderPolicy() = default;

std::unique_ptr<OrderPolicy> OrderPolicy::load(const std::string& path, PipelineParser parse) {
  std::unique_ptr<OrderPolicy> p(new OrderPolicy());
  p->path_ = path;
  std::string model;
  p->error_ = readInto(path, parse, &p->orders_, &p->tries_, &model);
  if (!p->error_.empty() || model.empty()) return p;
  RunnerChoice choice;
  choice.runner = "onnx";
  choice.model = model;
  choice.optionPrefix = "-mlbridge-po-";
  auto runner = createRunner(
      choice, {mlbridge::TensorSpec::create<int64_t>(kPhaseOrderFeaturesName, {int64_t(kNumPhaseOrderFeatures)})},
      {mlbridge::TensorSpec::create<float>(kOrderScoresName, {int64_t(p->orders_.size())})});
  if (!runner.ok()) {
    p->error_ = "its model: " + runner.status().toString();
    return p;
  }
  p->runner_ = std::move(*runner);
  return p;
}

bool OrderPolicy::choose(const llvm::Module& m, unsigned tries, std::vector<size_t>* out, std::string* error) {
  out->clear();
  tries = std::min<unsigned>(tries, static_cast<unsigned>(orders_.size()));
  std::vector<size_t> idx(orders_.size());
  std::iota(idx.begin(), idx.end(), size_t(0));
  if (runner_) {
    int64_t* in = runner_->getTensor<int64_t>(0);
    computePhaseOrderFeatures(m, in);
    mlbridge::Status st = runner_->evaluate();
    if (!st.ok()) {
      *error = "the model failed: " + st.toString();
      return false;
    }
    mlbridge::Span<const float> scores = runner_->output<float>(0);
    if (scores.size() != orders_.size()) {
      *error = "the model gave " + std::to_string(scores.size()) + " scores for " + std::to_string(orders_.size()) +
               " orders";
      return false;
    }
    for (float s : scores) {
      if (!std::isfinite(s)) {
        *error = "the model gave a score that is not a finite number";
        return false;
      }
    }
    // best score first, ties by index (a total order: the same choice every time)
    std::sort(idx.begin(), idx.end(),
              [&](size_t a, size_t b) { return scores[a] != scores[b] ? scores[a] > scores[b] : a < b; });
  }
  out->assign(idx.begin(), idx.begin() + tries);
  return true;
}

}  // namespace mlbridge_llvm
