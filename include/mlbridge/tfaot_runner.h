// TfAotModelRunner: a TensorFlow SavedModel compiled ahead of time by XLA
// (`saved_model_cli aot_compile_cpu`, LLVM's release mode) behind the
// ModelRunner interface. The model comes from mlbridge_add_tf_aot_model
// (cmake/MLBridgeTfAot.cmake, docs/tfaot.md) as a descriptor:
//
//   extern "C" const mlbridge_tfaot_model* InlinerPolicy_tfaot_model(void);  // generated
//   auto runner = mlbridge::TfAotModelRunner::create(InlinerPolicy_tfaot_model(), features, {advice});
//   if (!runner.ok()) { report(runner.status()); return; }
//   *(*runner)->getTensor<int64_t>(0) = 3;
//   mlbridge::StatusOr<int64_t> decision = (*runner)->evaluate<int64_t>();
//
// Feeds and fetches are named by the signature's keys (XLA's "feed_<key>" /
// "fetch_<key>", as LLVM's ReleaseModeModelRunner). Matching is every
// in-process runner's (src/graph_binding.h): features by name (extra ones
// ignored, a feed without a feature is kNotFound naming it), dtypes and
// shapes equal (XLA's shapes are static); advice by name, or by position
// when no advice name matches and the counts are equal. Feeds XLA pruned
// (inputs the function never reads, e.g. TF-Agents' step_type / reward) are
// not in the descriptor and so are not needed.
//
// Each runner owns one instance of the XLA class (its buffers): evaluate()
// copies the features into XLA's argument buffers, runs, and copies the
// fetches (XLA's result table, filled by the run) into the advice buffers; it allocates nothing and takes no lock.
#ifndef MLBRIDGE_TFAOT_RUNNER_H
#define MLBRIDGE_TFAOT_RUNNER_H

#include <memory>
#include <string>
#include <vector>

#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"
#include "mlbridge/tfaot_model.h"

namespace mlbridge {

class TfAotModelRunner final : public ModelRunner {
 public:
  static StatusOr<std::unique_ptr<TfAotModelRunner>> create(const mlbridge_tfaot_model* model,
                                                            std::vector<TensorSpec> features,
                                                            std::vector<TensorSpec> advice);
  ~TfAotModelRunner() override;

  // The model's feeds and fetches as specs.
  static std::vector<TensorSpec> feedsOf(const mlbridge_tfaot_model* model);
  static std::vector<TensorSpec> fetchesOf(const mlbridge_tfaot_model* model);

  const mlbridge_tfaot_model* model() const { return model_; }

 private:
  TfAotModelRunner(const mlbridge_tfaot_model* model, std::vector<TensorSpec> features,
                   std::vector<TensorSpec> advice);
  Status evaluateImpl() override;

  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
  };
  struct Fetch {
    void* dst;
    size_t index;  // in model_->fetches
    size_t bytes;
  };
  const mlbridge_tfaot_model* model_;
  void* instance_ = nullptr;
  std::vector<Copy> in_;
  std::vector<Fetch> out_;
};

}  // namespace mlbridge

#endif  // MLBRIDGE_TFAOT_RUNNER_H
