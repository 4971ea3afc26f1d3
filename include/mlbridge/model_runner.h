// ModelRunner: the one interface a compiler pass talks to, whatever the model
// is (a Python process over pipes, gRPC, an in-process engine).
//
// Two styles over the same buffers:
//  * LLVM style: specs fixed at construction; `input<T>(i)` is a view of
//    runner-owned storage the caller writes into; nothing is allocated per call.
//  * paper style: `setFeature("name", value)` and
//    `populateFeatures({"a", 1}, {"b", std::vector<float>{...}})`.
// `evaluate()` checks the model's answer against the output specs: a dtype or
// shape mismatch is an error, never a reinterpretation.
//
// Versioning contract: features are matched by name. The compiler may send
// more features than the model uses (the model ignores them); a model that
// needs a feature the compiler does not send refuses the session with an error
// naming it. Specs never change within a session.
//
// Thread-safety: one runner is used by one thread at a time.
#ifndef MLBRIDGE_MODEL_RUNNER_H
#define MLBRIDGE_MODEL_RUNNER_H

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mlbridge/feature.h"
#include "mlbridge/span.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_ref.h"
#include "mlbridge/tensor_spec.h"

namespace mlbridge {

class ModelRunner {
 public:
  virtual ~ModelRunner();
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  const std::vector<TensorSpec>& inputSpecs() const { return inputSpecs_; }
  const std::vector<TensorSpec>& outputSpecs() const { return outputSpecs_; }
  // Index of the named input, or -1.
  int inputIndex(std::string_view name) const;
  int outputIndex(std::string_view name) const;

  // ---- LLVM style -------------------------------------------------------
  // View of input i's storage. A wrong T (or index) returns an empty span and
  // makes the next evaluate() fail with the reason: never a silent reinterpretation.
  template <class T>
  Span<T> input(size_t i) {
    if (!checkAccess(i, dtypeOf<T>(), "input")) return Span<T>();
    return Span<T>(static_cast<T*>(inputs_[i].data), inputSpecs_[i].elementCount());
  }
  // LLVM's MLModelRunner::getTensor<T>(i).
  template <class T>
  T* getTensor(size_t i) { return input<T>(i).data(); }
  void* inputData(size_t i) { return i < inputs_.size() ? inputs_[i].data : nullptr; }

  // ---- paper style ------------------------------------------------------
  // Copies `value` into the input of the same name, converting only when the
  // value is preserved (int -> wider int or exact float, double -> float);
  // anything else (float -> int, out of range, wrong element count or shape)
  // is an error.
  Status setFeature(const Feature& value);
  template <class T>
  Status setFeature(std::string_view name, const T& value) { return setFeature(Feature(name, value)); }
  Status populateFeatures(const Feature& f0, const Feature& f1 = Feature(), const Feature& f2 = Feature(),
                          const Feature& f3 = Feature(), const Feature& f4 = Feature(),
                          const Feature& f5 = Feature(), const Feature& f6 = Feature(),
                          const Feature& f7 = Feature(), const Feature& f8 = Feature(),
                          const Feature& f9 = Feature(), const Feature& f10 = Feature(),
                          const Feature& f11 = Feature(), const Feature& f12 = Feature(),
                          const Feature& f13 = Feature(), const Feature& f14 = Feature(),
                          const Feature& f15 = Feature());
  Status populateFeatures(Span<const Feature> features);

  // ---- evaluation -------------------------------------------------------
  // Names the following observations (e.g. the function being compiled).
  Status setContext(std::string_view name);
  // Sends the inputs and waits for the outputs (bounded by the runner's timeout).
  Status evaluate();
  // Single-element first output as T (T must be the output's dtype).
  template <class T>
  StatusOr<T> evaluate() {
    Status s = evaluate();
    if (!s.ok()) return s;
    s = checkOutput(0, dtypeOf<T>(), 1);
    if (!s.ok()) return s;
    T value;
    std::memcpy(&value, outputs_[0].data, sizeof(T));
    return value;
  }
  // All of output i as an owned vector (after evaluate()).
  template <class T>
  StatusOr<std::vector<T>> outputVector(size_t i = 0) const {
    Status s = checkOutput(i, dtypeOf<T>(), 0);
    if (!s.ok()) return s;
    const T* p = static_cast<const T*>(outputs_[i].data);
    return std::vector<T>(p, p + outputSpecs_[i].elementCount());
  }
  // Copies output i into a caller buffer of exactly its element count.
  template <class T>
  Status outputInto(size_t i, Span<T> out) const {
    MLBRIDGE_RETURN_IF_ERROR(checkOutput(i, dtypeOf<T>(), 0));
    if (out.size() != outputSpecs_[i].elementCount())
      return invalidArgument("output '" + outputSpecs_[i].name() + "' has " +
                             std::to_string(outputSpecs_[i].elementCount()) + " elements, buffer has " +
                             std::to_string(out.size()));
    for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<const T*>(outputs_[i].data)[k];
    return Status::OK();
  }
  // Zero-copy view of output i, valid until the next evaluate(); empty on a
  // wrong T or index.
  template <class T>
  Span<const T> output(size_t i = 0) const {
    if (!checkOutput(i, dtypeOf<T>(), 0).ok()) return Span<const T>();
    return Span<const T>(static_cast<const T*>(outputs_[i].data), outputSpecs_[i].elementCount());
  }
  TensorRef outputRef(size_t i) const { return outputs_[i]; }

  // Ends the session cleanly (the model sees a clean end). Idempotent; every
  // runner's destructor calls it. Later evaluate() calls fail.
  Status finish();

 protected:
  ModelRunner(std::vector<TensorSpec> inputs, std::vector<TensorSpec> outputs);
  // Must be called by a factory before use; validates specs, allocates storage.
  Status initBuffers();

  // Backend hooks. evaluateImpl reads inputRefs() and fills outputRefs().
  virtual Status evaluateImpl() = 0;
  virtual Status setContextImpl(std::string_view /*name*/) { return Status::OK(); }
  virtual Status finishImpl() { return Status::OK(); }

  Span<const TensorRef> inputRefs() const { return Span<const TensorRef>(inputConst_.data(), inputConst_.size()); }
  Span<const MutableTensorRef> outputRefs() const { return Span<const MutableTensorRef>(outputs_.data(), outputs_.size()); }
  bool finished() const { return finished_; }

 private:
  bool checkAccess(size_t i, DType requested, const char* what);
  Status checkOutput(size_t i, DType requested, size_t requiredCount) const;

  std::vector<TensorSpec> inputSpecs_;
  std::vector<TensorSpec> outputSpecs_;
  std::vector<MutableTensorRef> inputs_;
  std::vector<TensorRef> inputConst_;
  std::vector<MutableTensorRef> outputs_;
  std::unique_ptr<unsigned char[]> arena_;
  std::vector<std::string> stringStorage_;  // elements of kString tensors
  Status sticky_;      // misuse recorded by input<T>() and reported by evaluate()
  bool finished_ = false;
};

}  // namespace mlbridge

#endif  // MLBRIDGE_MODEL_RUNNER_H
