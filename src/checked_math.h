// Checked arithmetic for every shape, size, stride, offset and index that is
// computed from a number found in a model file or a message: such numbers
// are untrusted, and signed overflow is undefined behaviour. One helper for
// the whole library (engine, wire codecs, specs): callers turn a `false`
// into an error naming the node or field (docs/reliability.md, "Limits").
#ifndef MLBRIDGE_SRC_CHECKED_MATH_H
#define MLBRIDGE_SRC_CHECKED_MATH_H

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace mlbridge {
namespace checked {

// *out = a op b; false (and *out unspecified) when the exact result does
// not fit T. GCC and clang builtins: exact for every integer type.
template <class T>
[[nodiscard]] inline bool add(T a, T b, T* out) {
  static_assert(std::is_integral<T>::value, "integers only");
  return !__builtin_add_overflow(a, b, out);
}
template <class T>
[[nodiscard]] inline bool sub(T a, T b, T* out) {
  static_assert(std::is_integral<T>::value, "integers only");
  return !__builtin_sub_overflow(a, b, out);
}
template <class T>
[[nodiscard]] inline bool mul(T a, T b, T* out) {
  static_assert(std::is_integral<T>::value, "integers only");
  return !__builtin_mul_overflow(a, b, out);
}

// |v| as an unsigned number (defined for INT64_MIN, unlike -v).
inline uint64_t magnitude(int64_t v) { return v < 0 ? uint64_t(0) - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }

// Elements of a tensor with dimensions dims[0..rank): false on a negative
// dimension, or when the count, any one dimension, or count * elementSize
// exceeds limitBytes (so that a zero dimension cannot hide a huge one).
inline bool elementCount(const int64_t* dims, size_t rank, size_t elementSize, uint64_t limitBytes, size_t* count) {
  uint64_t n = 1;
  bool empty = false;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t d = dims[i];
    if (d < 0 || static_cast<uint64_t>(d) > limitBytes) return false;
    if (d == 0) {
      empty = true;
      continue;
    }
    if (!mul<uint64_t>(n, static_cast<uint64_t>(d), &n) || n > limitBytes) return false;
  }
  if (empty) n = 0;
  uint64_t bytes;
  if (!mul<uint64_t>(n, elementSize, &bytes) || bytes > limitBytes || n > SIZE_MAX) return false;
  *count = static_cast<size_t>(n);
  return true;
}

}  // namespace checked
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_CHECKED_MATH_H
