// LiteRtModelRunner: a .tflite model run by Google's LiteRT (TFLite's
// successor; what LLVM's development mode runs) behind ModelRunner.
//
//   auto runner = mlbridge::LiteRtModelRunner::create("model_dir/", features, {advice});
//   if (!runner.ok()) { report(runner.status()); return; }
//   *(*runner)->getTensor<int64_t>(0) = 3;
//   mlbridge::StatusOr<int64_t> decision = (*runner)->evaluate<int64_t>();
//
// LiteRT is loaded at run time (dlopen), never linked: `libLiteRt.so` from the
// PyPI wheel `ai-edge-litert` (scripts/get-litert.sh puts it in
// .deps/litert/lib). No registry ships its headers: the few C functions used
// are declared in src/litert/litert_api.h, pinned to the wheel's version
// (kLiteRtPinnedVersion); docs/tfaot.md says how to move the pin.
//
// `model` is a .tflite file, or LLVM's development-mode model folder
// (model.tflite + output_spec.json, whose `logging_name`s name the outputs).
// Tensors are the model signature's (the SavedModel's keys); binding as for
// every in-process runner (src/graph_binding.h): features by name (extra
// ones ignored, a missing input is kNotFound naming it), dtypes and shapes
// equal; advice by name, or by position when no name matches and the counts
// are equal.
//
// Each runner owns its LiteRT environment, compiled model and 64-byte aligned
// host buffers (wrapped once as LiteRT tensor buffers): evaluate() copies the
// features in, runs on the CPU (XNNPACK), and copies the outputs out; it
// allocates nothing. One runner per thread. Note: LiteRT prints a few INFO
// lines on stderr when an environment is created (no C API turns them off).
#ifndef MLBRIDGE_LITERT_RUNNER_H
#define MLBRIDGE_LITERT_RUNNER_H

#include <memory>
#include <string>
#include <vector>

#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"

namespace mlbridge {

struct LiteRtRunnerOptions {
  // libLiteRt.so to load; empty: $MLBRIDGE_LITERT_LIB, else "libLiteRt.so" on
  // the loader's search path.
  std::string library;
  // Signature to run; empty: "serving_default" if present, else the only one.
  std::string signature;
};

class LiteRtModelRunner final : public ModelRunner {
 public:
  static StatusOr<std::unique_ptr<LiteRtModelRunner>> create(const std::string& model,
                                                             std::vector<TensorSpec> features,
                                                             std::vector<TensorSpec> advice,
                                                             const LiteRtRunnerOptions& options = LiteRtRunnerOptions());
  ~LiteRtModelRunner() override;

  // The model's inputs and outputs (output names after output_spec.json).
  const std::vector<TensorSpec>& modelInputs() const { return modelInputs_; }
  const std::vector<TensorSpec>& modelOutputs() const { return modelOutputs_; }

  // The ai-edge-litert version whose C ABI src/litert/litert_api.h declares.
  static const char* pinnedVersion();

  struct State;  // LiteRT handles and host buffers (src/litert/litert_runner.cc)

 private:
  LiteRtModelRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice);
  Status evaluateImpl() override;

  std::unique_ptr<State> state_;
  std::vector<TensorSpec> modelInputs_, modelOutputs_;
};

}  // namespace mlbridge

#endif  // MLBRIDGE_LITERT_RUNNER_H
