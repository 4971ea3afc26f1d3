#include "engine/common.h"

#include "checked_math.h"

#include <cstring>
#include <limits>
#include <cstdlib>

namespace mlbridge {
namespace engine {

bool shapeElementCount(const Shape& shape, size_t elementSize, size_t limitBytes, size_t* count) {
  return checked::elementCount(shape.data(), shape.size(), elementSize, limitBytes, count);
}

size_t elementCount(const Shape& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

std::string shapeString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

void Buffer::Free::operator()(unsigned char* p) const { std::free(p); }

std::shared_ptr<Buffer> Buffer::allocate(size_t bytes) {
  if (bytes > std::numeric_limits<size_t>::max() - 2 * kBufferAlign) return nullptr;
  size_t total = bytes + kBufferAlign;
  unsigned char* raw = static_cast<unsigned char*>(std::malloc(total));
  if (!raw) return nullptr;
  std::shared_ptr<Buffer> b(new Buffer());
  b->storage_.reset(raw);
  std::memset(b->storage_.get(), 0, total);
  unsigned char* p = b->storage_.get();
  p += (kBufferAlign - reinterpret_cast<uintptr_t>(p) % kBufferAlign) % kBufferAlign;
  b->aligned_ = p;
  b->size_ = bytes;
  return b;
}

namespace {
template <class T>
T loadAt(const void* p, size_t k) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(p) + k * sizeof(T), sizeof(T));
  return v;
}
}  // namespace

double tensorElementAsDouble(const Tensor& t, size_t k) {
  const void* p = t.data->data();
  switch (t.dtype) {
    case DType::kFloat32: return loadAt<float>(p, k);
    case DType::kFloat64: return loadAt<double>(p, k);
    case DType::kInt8: return loadAt<int8_t>(p, k);
    case DType::kUInt8: return loadAt<uint8_t>(p, k);
    case DType::kInt16: return loadAt<int16_t>(p, k);
    case DType::kUInt16: return loadAt<uint16_t>(p, k);
    case DType::kInt32: return loadAt<int32_t>(p, k);
    case DType::kUInt32: return loadAt<uint32_t>(p, k);
    case DType::kInt64: return static_cast<double>(loadAt<int64_t>(p, k));
    case DType::kUInt64: return static_cast<double>(loadAt<uint64_t>(p, k));
    case DType::kBool: return loadAt<uint8_t>(p, k) ? 1.0 : 0.0;
    default: return 0;
  }
}

int64_t tensorElementAsInt64(const Tensor& t, size_t k) {
  const void* p = t.data->data();
  switch (t.dtype) {
    case DType::kInt64: return loadAt<int64_t>(p, k);
    case DType::kUInt64: return static_cast<int64_t>(loadAt<uint64_t>(p, k));
    case DType::kInt32: return loadAt<int32_t>(p, k);
    case DType::kUInt32: return loadAt<uint32_t>(p, k);
    case DType::kInt16: return loadAt<int16_t>(p, k);
    case DType::kUInt16: return loadAt<uint16_t>(p, k);
    case DType::kInt8: return loadAt<int8_t>(p, k);
    case DType::kUInt8: return loadAt<uint8_t>(p, k);
    case DType::kBool: return loadAt<uint8_t>(p, k) ? 1 : 0;
    default: {
      double d = tensorElementAsDouble(t, k);
      if (!(d >= -9.2e18 && d <= 9.2e18)) return 0;
      return static_cast<int64_t>(d);
    }
  }
}

bool tensorToInt64s(const Tensor& t, std::vector<int64_t>* out) {
  if (t.dtype != DType::kInt64 && t.dtype != DType::kInt32) return false;
  if (t.shape.size() > 1) return false;
  out->clear();
  size_t n = t.count();
  out->reserve(n);
  for (size_t k = 0; k < n; ++k) out->push_back(tensorElementAsInt64(t, k));
  return true;
}

}  // namespace engine
}  // namespace mlbridge
