// A minimal non-owning view of contiguous elements (std::span is C++20).
#ifndef MLBRIDGE_SPAN_H
#define MLBRIDGE_SPAN_H

#include <cstddef>
#include <type_traits>
#include <vector>

namespace mlbridge {

template <class T>
class Span {
 public:
  constexpr Span() = default;
  constexpr Span(T* data, size_t size) : data_(data), size_(size) {}
  template <size_t N>
  constexpr Span(T (&array)[N]) : data_(array), size_(N) {}  // NOLINT
  template <class A, class U = T, class = std::enable_if_t<std::is_const<U>::value>>
  Span(const std::vector<std::remove_const_t<T>, A>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  template <class A>
  Span(std::vector<std::remove_const_t<T>, A>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  // Span<T> converts to Span<const T>.
  template <class U, class = std::enable_if_t<std::is_same<const U, T>::value>>
  constexpr Span(Span<U> other) : data_(other.data()), size_(other.size()) {}  // NOLINT

  constexpr T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& operator[](size_t i) const { return data_[i]; }
  constexpr T* begin() const { return data_; }
  constexpr T* end() const { return data_ + size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace mlbridge

#endif  // MLBRIDGE_SPAN_H
