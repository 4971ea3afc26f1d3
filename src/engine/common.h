// Engine basics shared by the ONNX reader, the graph IR, the planner and the
// kernels: shapes with overflow-checked sizes, aligned immutable buffers and
// constant tensors. See docs/engine.md.
#ifndef MLBRIDGE_SRC_ENGINE_COMMON_H
#define MLBRIDGE_SRC_ENGINE_COMMON_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mlbridge/dtype.h"
#include "mlbridge/status.h"

namespace mlbridge {
namespace engine {

// Highest tensor rank the engine accepts (broadcast and strided kernels keep
// fixed-size index arrays of this length: no allocation at evaluate time).
constexpr int kMaxRank = 8;
// Alignment of every buffer the engine allocates (constants, arena, slots).
constexpr size_t kBufferAlign = 64;

using Shape = std::vector<int64_t>;

// Number of elements of `shape`; false on a negative dimension or if the
// count (or count * elementSize) exceeds `limitBytes`.
bool shapeElementCount(const Shape& shape, size_t elementSize, size_t limitBytes, size_t* count);
// Element count of a shape already validated (no checks).
size_t elementCount(const Shape& shape);
// "[2,3]"
std::string shapeString(const Shape& shape);

inline size_t alignUp(size_t n, size_t a = kBufferAlign) { return (n + a - 1) / a * a; }

// Immutable-after-construction bytes, 64-byte aligned, zero-initialized.
// Shared (std::shared_ptr<const Buffer>) between the IR, programs and runners.
class Buffer {
 public:
  // nullptr if the data allocation fails.
  static std::shared_ptr<Buffer> allocate(size_t bytes);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return aligned_; }
  const void* data() const { return aligned_; }
  size_t size() const { return size_; }
  template <class T>
  T* as() { return static_cast<T*>(data()); }
  template <class T>
  const T* as() const { return static_cast<const T*>(data()); }

 private:
  struct Free {
    void operator()(unsigned char* p) const;
  };
  Buffer() = default;
  std::unique_ptr<unsigned char, Free> storage_;  // malloc'ed: a failed allocation is a nullptr, not a throw
  unsigned char* aligned_ = nullptr;
  size_t size_ = 0;
};

using BufferPtr = std::shared_ptr<const Buffer>;

// A constant tensor (an initializer, a Constant node, a folded value).
struct Tensor {
  DType dtype = DType::kInvalid;
  Shape shape;
  BufferPtr data;  // elementCount(shape) * dtypeSize(dtype) bytes

  size_t count() const { return elementCount(shape); }
  template <class T>
  const T* as() const { return data ? data->as<T>() : nullptr; }
};

// Reads element k of a numeric tensor (any supported dtype) widened.
double tensorElementAsDouble(const Tensor& t, size_t k);
int64_t tensorElementAsInt64(const Tensor& t, size_t k);
// A 1-D (or scalar) int32/int64 constant as int64 values; false otherwise.
bool tensorToInt64s(const Tensor& t, std::vector<int64_t>* out);

inline Status resourceExhausted(std::string m) { return Status(StatusCode::kResourceExhausted, std::move(m)); }

}  // namespace engine
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_ENGINE_COMMON_H
