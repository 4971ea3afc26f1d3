// Non-owning views of tensor storage, paired with the spec that describes it.
#ifndef MLBRIDGE_TENSOR_REF_H
#define MLBRIDGE_TENSOR_REF_H

#include <string>

#include "mlbridge/tensor_spec.h"

namespace mlbridge {

// `data` holds spec->byteSize() bytes (little-endian, row-major), or for
// DType::kString an array of spec->elementCount() std::string.
struct TensorRef {
  const TensorSpec* spec = nullptr;
  const void* data = nullptr;
};

struct MutableTensorRef {
  const TensorSpec* spec = nullptr;
  void* data = nullptr;
  operator TensorRef() const { return TensorRef{spec, data}; }  // NOLINT
};

}  // namespace mlbridge

#endif  // MLBRIDGE_TENSOR_REF_H
