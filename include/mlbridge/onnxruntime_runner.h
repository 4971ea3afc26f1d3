// ONNX Runtime (Microsoft's inference library) behind ModelRunner: the
// optional `onnxruntime` component, library mlbridge::onnxruntime, built when
// CMake finds ONNX Runtime (scripts/get-onnxruntime.sh installs a pinned one).
// Same shape as the built-in engine (onnx_runner.h), so the two are
// interchangeable:
//
//   auto model = mlbridge::OnnxRuntimeModel::load("policy.onnx");
//   if (!model.ok()) { report(model.status()); return; }
//   auto runner = mlbridge::OnnxRuntimeRunner::create(*model, features, {advice});
//   if (!runner.ok()) { report(runner.status()); return; }
//   *(*runner)->getTensor<float>(0) = 1.5f;                  // LLVM style
//   mlbridge::StatusOr<int64_t> decision = (*runner)->evaluate<int64_t>();
//
// An OnnxRuntimeModel is one ONNX Runtime session: loaded, optimized and
// inspected once (input/output names, dtypes and shapes), then immutable:
// share it between threads. Each OnnxRuntimeRunner wraps its own input and
// output buffers in ONNX Runtime tensors and binds them to the session once,
// at create() (an OrtIoBinding); evaluate() runs that binding: no copies in
// either direction, no name lookups, no lock of mlbridge's. So one model can
// be evaluated from many threads at once, one runner per thread. All runners of a process share one ONNX Runtime
// environment, created on first use (thread-safe) and kept until exit.
//
// Matching the compiler's specs (versioning as in model_runner.h, same rules
// as the built-in engine):
//  * features are matched to graph inputs by name; extra features are
//    ignored; a graph input without a feature is an error (kNotFound) naming
//    it. Dtypes must be equal; shapes must be equal except that a symbolic
//    dimension of the model takes the feature's value (one dim_param must get
//    one value across all features).
//  * advice specs are matched to graph outputs by name. Only when *no* advice
//    name matches any graph output and there are exactly as many advice specs
//    as graph outputs are they matched by position. Any other mismatch is an
//    error listing the graph outputs. Dtypes must be equal; fixed dimensions
//    must be equal (a symbolic output dimension is checked by ONNX Runtime at
//    evaluate(): a model output of another shape is an error, never a resize).
// Errors from ONNX Runtime keep its message. String tensors are not supported.
// Details, versions, threading and limits: docs/onnxruntime.md.
//
// This header includes no ONNX Runtime header and compiles with
// -fno-exceptions -fno-rtti.
#ifndef MLBRIDGE_ONNXRUNTIME_RUNNER_H
#define MLBRIDGE_ONNXRUNTIME_RUNNER_H

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

struct OnnxRuntimeOptions {
  // Threads that evaluate one call (the session's intra-op pool). 1 (the
  // default): the calling thread only, no pool is created; right for the small
  // models a compiler asks, and for many runners evaluated on many threads.
  // 0: ONNX Runtime's default (one per physical core).
  int intraOpThreads = 1;
  // Threads running independent graph branches in parallel; 1 (the default)
  // runs nodes one after another.
  int interOpThreads = 1;
  // Whether pool threads spin while waiting for work (lower latency with
  // intraOpThreads > 1, but they burn CPU between calls).
  bool allowSpinning = false;
  enum class Optimization { kNone, kBasic, kExtended, kAll };
  Optimization optimization = Optimization::kAll;
  // Values of symbolic input dimensions by dim_param name ({"batch", 1}),
  // fixed at load (ONNX Runtime free-dimension overrides); dimensions not
  // listed stay symbolic and take the features' values at create().
  std::vector<std::pair<std::string, int64_t>> dimValues;
  // Messages of this model's session at or above this severity go to the
  // mlbridge log hook (mlbridge/log.h): 0 verbose, 1 info, 2 warning (the
  // default), 3 error, 4 fatal. ONNX Runtime itself never prints.
  int logSeverity = 2;
};

class OnnxRuntimeModel {
 public:
  // Creates the session. Errors keep ONNX Runtime's message: kNotFound for a
  // missing file, kDataLoss for a file that is not a valid model,
  // kUnimplemented for an operator or type ONNX Runtime does not support,
  // kInvalidArgument for an invalid model or option, kFailedPrecondition when
  // the ONNX Runtime library is older than the headers mlbridge was built with.
  static StatusOr<std::shared_ptr<const OnnxRuntimeModel>> load(const std::string& path,
                                                                const OnnxRuntimeOptions& options = OnnxRuntimeOptions());
  // The same from bytes in memory (ONNX Runtime copies what it keeps).
  static StatusOr<std::shared_ptr<const OnnxRuntimeModel>> loadFromMemory(
      const void* data, size_t size, const OnnxRuntimeOptions& options = OnnxRuntimeOptions());
  ~OnnxRuntimeModel();
  OnnxRuntimeModel(const OnnxRuntimeModel&) = delete;
  OnnxRuntimeModel& operator=(const OnnxRuntimeModel&) = delete;

  // Graph inputs (initializers excluded) and outputs as declared, -1 where a
  // dimension is symbolic. dtype kInvalid marks a type mlbridge cannot carry
  // (float16, a sequence, ...); typeName() names it.
  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;
  // Input i's dim_param names ("batch"), "" for fixed or unnamed dimensions.
  const std::vector<std::string>& declaredInputDimNames(size_t i) const;
  const std::vector<std::string>& declaredOutputDimNames(size_t i) const;
  // ONNX type of input/output i: "float", "float16", "seq(tensor(float))", ...
  const std::string& inputTypeName(size_t i) const;
  const std::string& outputTypeName(size_t i) const;
  const std::string& producer() const;  // "pytorch 2.5.0", "onnx.helper", ...
  const OnnxRuntimeOptions& options() const;

  // Version of the ONNX Runtime library in use ("1.31.1"), and the C API
  // version mlbridge was compiled against (the library must serve it).
  static std::string runtimeVersion();
  static int apiVersion();

  struct Impl;

 private:
  friend class OnnxRuntimeRunner;
  explicit OnnxRuntimeModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class OnnxRuntimeRunner final : public ModelRunner {
 public:
  // Matches the specs to the model (see the top of this file), allocates this
  // runner's buffers and wraps them in ONNX Runtime tensors.
  static StatusOr<std::unique_ptr<OnnxRuntimeRunner>> create(std::shared_ptr<const OnnxRuntimeModel> model,
                                                             std::vector<TensorSpec> features,
                                                             std::vector<TensorSpec> advice);
  // Convenience: OnnxRuntimeModel::load, then create.
  static StatusOr<std::unique_ptr<OnnxRuntimeRunner>> create(const std::string& onnxPath,
                                                             std::vector<TensorSpec> features,
                                                             std::vector<TensorSpec> advice,
                                                             const OnnxRuntimeOptions& options = OnnxRuntimeOptions());
  ~OnnxRuntimeRunner() override;

  const std::shared_ptr<const OnnxRuntimeModel>& model() const;
  // The graph output that advice spec i is bound to.
  const std::string& boundOutputName(size_t i) const;

  struct Impl;

 private:
  OnnxRuntimeRunner(std::vector<TensorSpec> features, std::vector<TensorSpec> advice);
  Status evaluateImpl() override;

  std::unique_ptr<Impl> impl_;
};

}  // namespace mlbridge

#endif  // MLBRIDGE_ONNXRUNTIME_RUNNER_H
