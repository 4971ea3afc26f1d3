#include "mlbridge/model_runner.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "runner_specs.h"

namespace mlbridge {

namespace {

constexpr size_t kAlign = 64;  // cache line: no false sharing, SIMD-friendly

// One element widened for checked conversion.
struct Scalar {
  enum Kind { kSigned, kUnsigned, kReal, kBoolean } kind;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
};

template <class T>
T load(const void* p, size_t k) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(p) + k * sizeof(T), sizeof(T));
  return v;
}

Scalar readScalar(DType t, const void* p, size_t k) {
  Scalar s{Scalar::kSigned};
  switch (t) {
    case DType::kInt8: s.i = load<int8_t>(p, k); break;
    case DType::kInt16: s.i = load<int16_t>(p, k); break;
    case DType::kInt32: s.i = load<int32_t>(p, k); break;
    case DType::kInt64: s.i = load<int64_t>(p, k); break;
    case DType::kUInt8: s.kind = Scalar::kUnsigned; s.u = load<uint8_t>(p, k); break;
    case DType::kUInt16: s.kind = Scalar::kUnsigned; s.u = load<uint16_t>(p, k); break;
    case DType::kUInt32: s.kind = Scalar::kUnsigned; s.u = load<uint32_t>(p, k); break;
    case DType::kUInt64: s.kind = Scalar::kUnsigned; s.u = load<uint64_t>(p, k); break;
    case DType::kFloat32: s.kind = Scalar::kReal; s.d = load<float>(p, k); break;
    case DType::kFloat64: s.kind = Scalar::kReal; s.d = load<double>(p, k); break;
    case DType::kBool: s.kind = Scalar::kBoolean; s.u = load<uint8_t>(p, k) != 0; break;
    default: break;
  }
  if (s.kind == Scalar::kSigned && s.i >= 0) {  // normalize non-negative ints to unsigned
    s.kind = Scalar::kUnsigned;
    s.u = static_cast<uint64_t>(s.i);
  }
  return s;
}

template <class T>
bool storeInt(const Scalar& s, void* dst, size_t k) {
  T v;
  if (s.kind == Scalar::kUnsigned || s.kind == Scalar::kBoolean) {
    if (s.u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
    v = static_cast<T>(s.u);
  } else if (s.kind == Scalar::kSigned) {
    if (!std::numeric_limits<T>::is_signed || s.i < static_cast<int64_t>(std::numeric_limits<T>::min())) return false;
    v = static_cast<T>(s.i);
  } else {
    return false;  // float -> int would truncate
  }
  std::memcpy(static_cast<unsigned char*>(dst) + k * sizeof(T), &v, sizeof(T));
  return true;
}

template <class T>
bool storeReal(const Scalar& s, void* dst, size_t k) {
  T v;
  if (s.kind == Scalar::kReal) {
    if (std::isfinite(s.d) && std::fabs(s.d) > static_cast<double>(std::numeric_limits<T>::max())) return false;
    v = static_cast<T>(s.d);
  } else if (s.kind == Scalar::kSigned) {
    v = static_cast<T>(s.i);
    if (static_cast<long double>(v) != static_cast<long double>(s.i)) return false;  // not exact
  } else {
    v = static_cast<T>(s.u);
    if (static_cast<long double>(v) != static_cast<long double>(s.u)) return false;
  }
  std::memcpy(static_cast<unsigned char*>(dst) + k * sizeof(T), &v, sizeof(T));
  return true;
}

bool storeScalar(DType t, const Scalar& s, void* dst, size_t k) {
  switch (t) {
    case DType::kInt8: return storeInt<int8_t>(s, dst, k);
    case DType::kInt16: return storeInt<int16_t>(s, dst, k);
    case DType::kInt32: return storeInt<int32_t>(s, dst, k);
    case DType::kInt64: return storeInt<int64_t>(s, dst, k);
    case DType::kUInt8: return storeInt<uint8_t>(s, dst, k);
    case DType::kUInt16: return storeInt<uint16_t>(s, dst, k);
    case DType::kUInt32: return storeInt<uint32_t>(s, dst, k);
    case DType::kUInt64: return storeInt<uint64_t>(s, dst, k);
    case DType::kFloat32: return storeReal<float>(s, dst, k);
    case DType::kFloat64: return storeReal<double>(s, dst, k);
    case DType::kBool: {
      if (s.kind == Scalar::kReal || s.kind == Scalar::kSigned || s.u > 1) return false;
      static_cast<unsigned char*>(dst)[k] = static_cast<unsigned char>(s.u);
      return true;
    }
    default: return false;
  }
}

}  // namespace

ModelRunner::ModelRunner(std::vector<TensorSpec> inputs, std::vector<TensorSpec> outputs)
    : inputSpecs_(std::move(inputs)), outputSpecs_(std::move(outputs)) {}

ModelRunner::~ModelRunner() = default;

Status ModelRunner::initBuffers() {
  MLBRIDGE_RETURN_IF_ERROR(checkRunnerSpecs(inputSpecs_, outputSpecs_));
  size_t bytes = 0, strings = 0;
  auto place = [&](const TensorSpec& s) {
    if (s.type() == DType::kString) {
      strings += s.elementCount();
      return;
    }
    bytes = (bytes + kAlign - 1) / kAlign * kAlign + s.byteSize();
  };
  for (const TensorSpec& s : inputSpecs_) place(s);
  for (const TensorSpec& s : outputSpecs_) place(s);
  arena_.reset(new unsigned char[bytes + kAlign]());
  stringStorage_.assign(strings, std::string());
  unsigned char* base = arena_.get();
  base += (kAlign - reinterpret_cast<uintptr_t>(base) % kAlign) % kAlign;
  size_t off = 0, soff = 0;
  auto assign = [&](const TensorSpec& s) -> void* {
    if (s.type() == DType::kString) {
      void* p = stringStorage_.data() + soff;
      soff += s.elementCount();
      return p;
    }
    off = (off + kAlign - 1) / kAlign * kAlign;
    void* p = base + off;
    off += s.byteSize();
    return p;
  };
  inputs_.clear();
  inputConst_.clear();
  outputs_.clear();
  for (const TensorSpec& s : inputSpecs_) inputs_.push_back(MutableTensorRef{&s, assign(s)});
  for (const MutableTensorRef& r : inputs_) inputConst_.push_back(r);
  for (const TensorSpec& s : outputSpecs_) outputs_.push_back(MutableTensorRef{&s, assign(s)});
  return Status::OK();
}

int ModelRunner::inputIndex(std::string_view name) const {
  for (size_t i = 0; i < inputSpecs_.size(); ++i)
    if (inputSpecs_[i].name() == name) return static_cast<int>(i);
  return -1;
}

int ModelRunner::outputIndex(std::string_view name) const {
  for (size_t i = 0; i < outputSpecs_.size(); ++i)
    if (outputSpecs_[i].name() == name) return static_cast<int>(i);
  return -1;
}

bool ModelRunner::checkAccess(size_t i, DType requested, const char* what) {
  if (i >= inputs_.size()) {
    if (sticky_.ok())
      sticky_ = invalidArgument(std::string(what) + " index " + std::to_string(i) + " is out of range (" +
                                std::to_string(inputs_.size()) + " inputs)");
    return false;
  }
  if (requested != inputSpecs_[i].type()) {
    if (sticky_.ok())
      sticky_ = invalidArgument(std::string(what) + " '" + inputSpecs_[i].name() + "' is " +
                                dtypeName(inputSpecs_[i].type()) + " but was accessed as " + dtypeName(requested));
    return false;
  }
  return true;
}

Status ModelRunner::checkOutput(size_t i, DType requested, size_t requiredCount) const {
  if (i >= outputs_.size())
    return invalidArgument("output index " + std::to_string(i) + " is out of range (" +
                           std::to_string(outputs_.size()) + " outputs)");
  const TensorSpec& s = outputSpecs_[i];
  if (requested != s.type())
    return invalidArgument("output '" + s.name() + "' is " + dtypeName(s.type()) + ", requested as " +
                           dtypeName(requested));
  if (requiredCount && s.elementCount() != requiredCount)
    return invalidArgument("output '" + s.name() + "' has shape " + shapeToString(s.shape()) +
                           "; read it with outputVector() or output()");
  return Status::OK();
}

Status ModelRunner::setFeature(const Feature& f) {
  int idx = inputIndex(f.name());
  if (idx < 0) return Status(StatusCode::kNotFound, "no feature named '" + std::string(f.name()) + "'");
  const TensorSpec& spec = inputSpecs_[idx];
  void* dst = inputs_[idx].data;
  if (f.count() != spec.elementCount())
    return invalidArgument("feature '" + spec.name() + "' has " + std::to_string(spec.elementCount()) +
                           " elements (shape " + shapeToString(spec.shape()) + "), got " + std::to_string(f.count()));
  if (f.hasShape()) {
    std::vector<int64_t> shape(f.shape().begin(), f.shape().end());
    if (shape != spec.shape())
      return invalidArgument("feature '" + spec.name() + "' has shape " + shapeToString(spec.shape()) + ", got " +
                             shapeToString(shape));
  }
  if (spec.type() == DType::kString || f.type() == DType::kString) {
    if (spec.type() != f.type())
      return invalidArgument("feature '" + spec.name() + "' is " + dtypeName(spec.type()) + ", got " +
                             dtypeName(f.type()));
    std::string* out = static_cast<std::string*>(dst);
    for (size_t k = 0; k < f.count(); ++k) out[k].assign(f.stringAt(k));
    return Status::OK();
  }
  if (f.type() == spec.type()) {
    std::memcpy(dst, f.data(), spec.byteSize());
    return Status::OK();
  }
  for (size_t k = 0; k < f.count(); ++k) {
    if (!storeScalar(spec.type(), readScalar(f.type(), f.data(), k), dst, k))
      return invalidArgument("feature '" + spec.name() + "' is " + dtypeName(spec.type()) + "; element " +
                             std::to_string(k) + " of the " + dtypeName(f.type()) +
                             " value cannot be converted without changing it");
  }
  return Status::OK();
}

Status ModelRunner::populateFeatures(const Feature& f0, const Feature& f1, const Feature& f2, const Feature& f3,
                                     const Feature& f4, const Feature& f5, const Feature& f6, const Feature& f7,
                                     const Feature& f8, const Feature& f9, const Feature& f10, const Feature& f11,
                                     const Feature& f12, const Feature& f13, const Feature& f14, const Feature& f15) {
  const Feature* all[] = {&f0, &f1, &f2, &f3, &f4, &f5, &f6, &f7, &f8, &f9, &f10, &f11, &f12, &f13, &f14, &f15};
  for (const Feature* f : all) {
    if (f->empty()) continue;
    MLBRIDGE_RETURN_IF_ERROR(setFeature(*f));
  }
  return Status::OK();
}

Status ModelRunner::populateFeatures(Span<const Feature> features) {
  for (const Feature& f : features) MLBRIDGE_RETURN_IF_ERROR(setFeature(f));
  return Status::OK();
}

Status ModelRunner::setContext(std::string_view name) {
  if (finished_) return failedPrecondition("the session has ended");
  return setContextImpl(name);
}

Status ModelRunner::evaluate() {
  if (finished_) return failedPrecondition("the session has ended; create a new runner");
  if (!sticky_.ok()) {
    Status s = std::move(sticky_);
    sticky_ = Status::OK();
    return s;
  }
  return evaluateImpl();
}

Status ModelRunner::finish() {
  if (finished_) return Status::OK();
  finished_ = true;
  return finishImpl();
}

}  // namespace mlbridge
