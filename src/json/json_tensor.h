// Tensor values <-> JSON number lists, shared by tools and tests.
#ifndef MLBRIDGE_SRC_JSON_JSON_TENSOR_H
#define MLBRIDGE_SRC_JSON_JSON_TENSOR_H

#include <string>

#include "json/json.h"
#include "mlbridge/tensor_ref.h"

namespace mlbridge {
namespace json {

// Fills `dst` (spec.elementCount() elements of spec.type()) from a flat JSON
// list; values must fit the dtype exactly ("NaN"/"Infinity" allowed for floats).
Status readTensorData(const Value& list, const TensorSpec& spec, void* dst);
// Appends the canonical flat list "[1,2.5,...]".
void appendTensorData(std::string& out, TensorRef t);
// Appends {"name":..,"type":..,"shape":[..],"data":[..]}.
void appendTensor(std::string& out, TensorRef t);

}  // namespace json
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_JSON_JSON_TENSOR_H
