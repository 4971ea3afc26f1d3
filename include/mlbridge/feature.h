// Feature: a named value for the paper-style API
//   runner.populateFeatures({"a", 1}, {"b", std::vector<float>{...}});
// It only points at the caller's data; use it within the call it is made for.
#ifndef MLBRIDGE_FEATURE_H
#define MLBRIDGE_FEATURE_H

#include <cstdint>
#include <initializer_list>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "mlbridge/dtype.h"
#include "mlbridge/span.h"

namespace mlbridge {

class Feature {
 public:
  Feature() = default;

  // A scalar (number or bool).
  template <class T, class = std::enable_if_t<std::is_arithmetic<T>::value>>
  Feature(std::string_view name, T value) : name_(name), type_(dtypeOf<T>()), count_(1), scalar_(true) {
    static_assert(dtypeOf<T>() != DType::kInvalid, "unsupported element type");
    static_assert(sizeof(T) <= sizeof(storage_), "scalar too large");
    new (storage_) T(value);
  }
  // A flat vector; matches a spec with the same element count.
  template <class T>
  Feature(std::string_view name, const std::vector<T>& values)
      : Feature(name, dtypeOf<T>(), values.data(), values.size()) {
    static_assert(!std::is_same<T, bool>::value, "std::vector<bool> is packed; use uint8_t or Span<const bool>");
  }
  template <class T>
  Feature(std::string_view name, Span<T> values)
      : Feature(name, dtypeOf<T>(), values.data(), values.size()) {}
  template <class T>
  Feature(std::string_view name, std::initializer_list<T> values)
      : Feature(name, dtypeOf<T>(), values.begin(), values.size()) {}
  // N-D data: the shape must equal the spec's shape.
  template <class T>
  Feature(std::string_view name, Span<const T> values, Span<const int64_t> shape)
      : Feature(name, dtypeOf<T>(), values.data(), values.size()) {
    shape_ = shape;
    hasShape_ = true;
  }
  // Strings.
  Feature(std::string_view name, const char* value) : Feature(name, std::string_view(value)) {}
  Feature(std::string_view name, std::string_view value)
      : name_(name), type_(DType::kString), data_(nullptr), count_(1), stringScalar_(value) {}
  Feature(std::string_view name, const std::vector<std::string>& values)
      : Feature(name, DType::kString, values.data(), values.size()) {}

  bool empty() const { return name_.empty(); }
  std::string_view name() const { return name_; }
  DType type() const { return type_; }
  size_t count() const { return count_; }
  // Element storage: numbers, or std::string for kString (see stringAt).
  const void* data() const { return scalar_ ? static_cast<const void*>(storage_) : data_; }
  std::string_view stringAt(size_t i) const {
    return data_ ? std::string_view(static_cast<const std::string*>(data_)[i]) : stringScalar_;
  }
  bool hasShape() const { return hasShape_; }
  Span<const int64_t> shape() const { return shape_; }

 private:
  Feature(std::string_view name, DType type, const void* data, size_t count)
      : name_(name), type_(type), data_(data), count_(count) {}

  std::string_view name_;
  DType type_ = DType::kInvalid;
  const void* data_ = nullptr;
  size_t count_ = 0;
  bool scalar_ = false;
  bool hasShape_ = false;
  Span<const int64_t> shape_;
  std::string_view stringScalar_;
  alignas(8) unsigned char storage_[8] = {};
};

}  // namespace mlbridge

#endif  // MLBRIDGE_FEATURE_H
