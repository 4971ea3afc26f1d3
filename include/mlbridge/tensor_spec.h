// TensorSpec: a named, typed, shaped tensor slot (as LLVM's TensorSpec).
#ifndef MLBRIDGE_TENSOR_SPEC_H
#define MLBRIDGE_TENSOR_SPEC_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mlbridge/dtype.h"
#include "mlbridge/status.h"

namespace mlbridge {

namespace json {
class Value;
}

class TensorSpec {
 public:
  TensorSpec() = default;
  TensorSpec(std::string name, DType type, std::vector<int64_t> shape, int port = 0)
      : name_(std::move(name)), type_(type), shape_(std::move(shape)), port_(port) {}

  // LLVM style: TensorSpec::create<int64_t>("callee_users", {1}).
  template <class T>
  static TensorSpec create(std::string name, std::vector<int64_t> shape, int port = 0) {
    return TensorSpec(std::move(name), dtypeOf<T>(), std::move(shape), port);
  }

  const std::string& name() const { return name_; }
  DType type() const { return type_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int port() const { return port_; }
  // Product of the shape (1 for a scalar, shape []).
  size_t elementCount() const;
  // elementCount() * dtypeSize(type()); 0 for strings.
  size_t byteSize() const { return elementCount() * dtypeSize(type_); }

  // Non-empty name, known dtype, no negative dimension, size that fits memory.
  Status validate() const;

  // LLVM's exact JSON form: {"name":"x","type":"int64_t","port":0,"shape":[1]}
  std::string toJSON() const;
  void appendJSON(std::string& out) const;
  // Accepts any key order and white space; validates the result.
  static StatusOr<TensorSpec> fromJSON(std::string_view json);
  // The same, from an already parsed JSON value (library-internal JSON DOM).
  static StatusOr<TensorSpec> fromJSONValue(const json::Value& value);

  bool operator==(const TensorSpec& o) const {
    return name_ == o.name_ && type_ == o.type_ && shape_ == o.shape_ && port_ == o.port_;
  }
  bool operator!=(const TensorSpec& o) const { return !(*this == o); }

 private:
  std::string name_;
  DType type_ = DType::kInvalid;
  std::vector<int64_t> shape_;
  int port_ = 0;
};

// "[2,3]" for error messages.
std::string shapeToString(const std::vector<int64_t>& shape);

// Checks a list of specs: each valid, names unique. `what` names the list in
// the error ("feature", "advice").
Status validateSpecs(const std::vector<TensorSpec>& specs, const char* what);

}  // namespace mlbridge

#endif  // MLBRIDGE_TENSOR_SPEC_H
