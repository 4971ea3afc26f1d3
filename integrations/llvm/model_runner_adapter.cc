#include "model_runner_adapter.h"

#include <llvm/Support/raw_ostream.h>

#include <utility>

namespace mlbridge_llvm {

namespace {

mlbridge::DType toDType(llvm::TensorType t) {
  switch (t) {
    case llvm::TensorType::Float: return mlbridge::DType::kFloat32;
    case llvm::TensorType::Double: return mlbridge::DType::kFloat64;
    case llvm::TensorType::Int8: return mlbridge::DType::kInt8;
    case llvm::TensorType::UInt8: return mlbridge::DType::kUInt8;
    case llvm::TensorType::Int16: return mlbridge::DType::kInt16;
    case llvm::TensorType::UInt16: return mlbridge::DType::kUInt16;
    case llvm::TensorType::Int32: return mlbridge::DType::kInt32;
    case llvm::TensorType::UInt32: return mlbridge::DType::kUInt32;
    case llvm::TensorType::Int64: return mlbridge::DType::kInt64;
    case llvm::TensorType::UInt64: return mlbridge::DType::kUInt64;
    default: return mlbridge::DType::kInvalid;
  }
}

std::string describe(const mlbridge::TensorSpec& s) {
  return std::string(mlbridge::dtypeName(s.type())) + mlbridge::shapeToString(s.shape());
}

}  // namespace

mlbridge::TensorSpec toMLBridgeSpec(const llvm::TensorSpec& spec) {
  return mlbridge::TensorSpec(spec.name(), toDType(spec.type()), spec.shape(), spec.port());
}

std::vector<mlbridge::TensorSpec> toMLBridgeSpecs(const std::vector<llvm::TensorSpec>& specs) {
  std::vector<mlbridge::TensorSpec> out;
  out.reserve(specs.size());
  for (const llvm::TensorSpec& s : specs) out.push_back(toMLBridgeSpec(s));
  return out;
}

MLBridgeModelRunner::MLBridgeModelRunner(llvm::LLVMContext& ctx, std::unique_ptr<mlbridge::ModelRunner> runner,
                                         size_t numInputs, size_t outputBytes, std::string what)
    // Release: an inference runner. LLVM uses the kind only to isa<> its own
    // runner classes, which the inline advisor never does.
    : llvm::MLModelRunner(ctx, Kind::Release, numInputs),
      runner_(std::move(runner)),
      fallback_(new unsigned char[outputBytes ? outputBytes : 1]()),
      what_(std::move(what)) {}

mlbridge::StatusOr<std::unique_ptr<MLBridgeModelRunner>> MLBridgeModelRunner::create(
    llvm::LLVMContext& ctx, std::unique_ptr<mlbridge::ModelRunner> runner,
    const std::vector<llvm::TensorSpec>& inputs, const llvm::TensorSpec& output, std::string what) {
  if (!runner) return mlbridge::invalidArgument(what + ": no runner");
  const mlbridge::TensorSpec want = toMLBridgeSpec(output);
  if (runner->outputSpecs().empty())
    return mlbridge::invalidArgument(what + ": the runner has no output, LLVM expects '" + want.name() + "'");
  const mlbridge::TensorSpec& got = runner->outputSpecs()[0];
  if (got.type() != want.type() || got.shape() != want.shape())
    return mlbridge::invalidArgument(what + ": output '" + got.name() + "' is " + describe(got) + ", LLVM expects '" +
                                     want.name() + "' " + describe(want));
  // Checked above, so evaluateUntyped() can hand out the buffer unchecked.
  std::unique_ptr<MLBridgeModelRunner> r(
      new MLBridgeModelRunner(ctx, std::move(runner), inputs.size(), output.getTotalTensorBufferSize(), std::move(what)));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const mlbridge::TensorSpec spec = toMLBridgeSpec(inputs[i]);
    const int j = r->runner_->inputIndex(spec.name());
    void* buffer = nullptr;
    if (j >= 0) {
      const mlbridge::TensorSpec& have = r->runner_->inputSpecs()[size_t(j)];
      if (have.type() != spec.type() || have.shape() != spec.shape())
        return mlbridge::invalidArgument(r->what_ + ": feature '" + spec.name() + "' is " + describe(have) +
                                         " in the runner, LLVM writes " + describe(spec));
      buffer = r->runner_->inputData(size_t(j));
    }
    r->setUpBufferForTensor(i, inputs[i], buffer);
  }
  return r;
}

void MLBridgeModelRunner::switchContext(llvm::StringRef name) {
  if (failed()) return;
  mlbridge::Status s = runner_->setContext(std::string_view(name.data(), name.size()));
  if (!s.ok()) fail(s);
}

void* MLBridgeModelRunner::evaluateUntyped() {
  if (failed()) return fallback_.get();
  mlbridge::Status s = runner_->evaluate();
  if (!s.ok()) {
    fail(s);
    return fallback_.get();
  }
  ++evaluations_;
  // LLVM's evaluate<T>() only reads through the pointer it gets.
  return const_cast<void*>(runner_->outputRef(0).data);
}

void MLBridgeModelRunner::fail(const mlbridge::Status& s) {
  error_ = s;
  llvm::errs() << "mlbridge: warning: " << what_ << " failed after " << evaluations_
               << " decisions: " << s.toString() << "; the compiler's default decisions are used from now on\n";
}

}  // namespace mlbridge_llvm
