// The built-in inference engine: standard .onnx files (opsets 13 to 28)
// evaluated in-process, with no dependency beyond the C++ standard library.
//
//   auto model = mlbridge::OnnxModel::load("policy.onnx");
//   if (!model.ok()) { report(model.status()); return; }
//   auto runner = mlbridge::NativeModelRunner::create(*model, features, {advice});
//   if (!runner.ok()) { report(runner.status()); return; }
//   *(*runner)->getTensor<float>(0) = 1.5f;                  // LLVM style
//   mlbridge::StatusOr<int64_t> decision = (*runner)->evaluate<int64_t>();
//
// An OnnxModel is loaded, validated and planned once (every shape resolved,
// constants folded, weights pre-packed, buffers laid out), then immutable:
// share it between threads. Each NativeModelRunner owns its working memory;
// evaluate() allocates nothing and takes no lock, so one model can be
// evaluated from many threads at once, one runner per thread.
//
// Matching the compiler's specs (versioning as in model_runner.h):
//  * features are matched to graph inputs by name; extra features are
//    ignored; a graph input without a feature is an error naming it. Dtypes
//    must be equal and shapes must be equal, except that a symbolic dimension
//    of the model (dim_param / unknown) takes the feature's value (the runner
//    then gets a model specialized to those shapes, planned once at create).
//  * advice specs are matched to graph outputs by name. Only when *no*
//    advice name matches any graph output and there are exactly as many
//    advice specs as graph outputs are they matched by position (exporters
//    often name outputs "output" or "37"). Any other mismatch is an error
//    listing the graph outputs. Dtypes and shapes must be equal.
// Details, supported operators and limits: docs/engine.md.
#ifndef MLBRIDGE_ONNX_RUNNER_H
#define MLBRIDGE_ONNX_RUNNER_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"

namespace mlbridge {

namespace engine {
struct Graph;
class Program;
}  // namespace engine

struct OnnxLoadOptions {
  // Values of symbolic input dimensions, by dim_param name ({"batch", 4}).
  std::vector<std::pair<std::string, int64_t>> dimValues;
  // Value of symbolic dimensions not listed above (and of unnamed ones).
  int64_t defaultDimValue = 1;
  // Limits on untrusted models; over one, loading fails fast with an error
  // naming the node and the option (kResourceExhausted, kDeadlineExceeded
  // for the time). Table and rationale: docs/reliability.md, "Limits".
  size_t maxFileBytes = size_t(2) << 30;    // the model (file or bytes): larger ones are refused before reading
  size_t maxTensorBytes = size_t(1) << 30;  // any one tensor (weights or intermediate)
  size_t maxFoldedBytes = size_t(256) << 20;  // all constants computed at load (folding, ConstantOfShape, ...) together
  int64_t loadTimeoutMs = 60000;            // wall time of one load / specialization (import, folding, planning); 0: none
  size_t maxGraphDepth = 10000;             // longest chain of dependent nodes
  bool allowNewerOpsets = false;            // accept opsets newer than 28 (unchecked semantics)
  bool portableKernels = false;             // baseline x86-64 kernels only (no AVX2 dispatch)
};

class OnnxModel {
 public:
  // Reads, validates and plans a model. Errors name the node (index in the
  // file, name, op type): kDataLoss for a malformed file, kUnimplemented for
  // an operator / attribute / dtype the engine does not support,
  // kInvalidArgument for an inconsistent model, kNotFound for a missing file.
  // External tensor data (next to the .onnx file) is supported by load().
  static StatusOr<std::shared_ptr<const OnnxModel>> load(const std::string& path,
                                                         const OnnxLoadOptions& options = OnnxLoadOptions());
  // The same from bytes in memory (copied as needed; external data refused).
  static StatusOr<std::shared_ptr<const OnnxModel>> loadFromMemory(const void* data, size_t size,
                                                                   const OnnxLoadOptions& options = OnnxLoadOptions());
  ~OnnxModel();
  OnnxModel(const OnnxModel&) = delete;
  OnnxModel& operator=(const OnnxModel&) = delete;

  // Graph inputs (initializers excluded) and outputs, shapes as bound.
  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;
  // Input i's dimensions as declared in the file, -1 where symbolic.
  const std::vector<int64_t>& declaredInputDims(size_t i) const;
  // Input i's dim_param names ("batch"), "" for fixed or unnamed dimensions.
  const std::vector<std::string>& declaredInputDimNames(size_t i) const;
  int64_t opsetVersion() const;
  const std::string& producer() const;  // "pytorch 2.5.0", "onnx.helper", ...
  // Bytes of working memory each runner allocates.
  size_t workingBytes() const;
  // Kernel set chosen for this CPU: "avx2" or "sse2".
  const char* kernelIsa() const;
  // Readable listings of the graph IR and of the execution plan.
  std::string dumpGraph() const;
  std::string dumpProgram() const;

  // The same model with input i bound to inputShapes[i] (symbolic dims
  // only); shares the weights. Planned anew unless the shapes are unchanged.
  StatusOr<std::shared_ptr<const OnnxModel>> specialize(const std::vector<std::vector<int64_t>>& inputShapes) const;

  // Library-internal views (src/engine/graph.h, program.h), e.g. for AOT code
  // generation from the loaded IR.
  const engine::Graph& graph() const;
  const engine::Program& program() const;

  struct Impl;

 private:
  explicit OnnxModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class NativeModelRunner final : public ModelRunner {
 public:
  // Matches the specs to the model (see the top of this file) and allocates
  // this runner's buffers.
  static StatusOr<std::unique_ptr<NativeModelRunner>> create(std::shared_ptr<const OnnxModel> model,
                                                             std::vector<TensorSpec> features,
                                                             std::vector<TensorSpec> advice);
  // Convenience: OnnxModel::load, then create.
  static StatusOr<std::unique_ptr<NativeModelRunner>> create(const std::string& onnxPath,
                                                             std::vector<TensorSpec> features,
                                                             std::vector<TensorSpec> advice,
                                                             const OnnxLoadOptions& options = OnnxLoadOptions());
  ~NativeModelRunner() override;

  // The model this runner evaluates (a specialization when symbolic
  // dimensions were bound differently from the loaded model).
  const std::shared_ptr<const OnnxModel>& model() const;
  // The graph output that advice spec i is bound to.
  const std::string& boundOutputName(size_t i) const;

  struct Impl;

 private:
  NativeModelRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice);
  Status evaluateImpl() override;

  std::unique_ptr<Impl> impl_;
};

}  // namespace mlbridge

#endif  // MLBRIDGE_ONNX_RUNNER_H
