// How a compiler's feature and advice specs bind to a model graph's inputs
// and outputs: the one rule set of every in-process runner (engine, AOT,
// ONNX Runtime), so they accept and refuse exactly the same things.
//  * Inputs match features by name; extra features are ignored; a graph input
//    without a feature is kNotFound, naming it. Dtypes must be equal; a
//    dimension declared -1 (symbolic) takes the feature's value, and one
//    symbolic name must get one value.
//  * Advice matches outputs by name; only when no advice name matches any
//    output and the counts are equal do they match by position. Dtypes must
//    be equal, shapes too except where an output dimension is -1.
#ifndef MLBRIDGE_SRC_GRAPH_BINDING_H
#define MLBRIDGE_SRC_GRAPH_BINDING_H

#include <string>
#include <vector>

#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"

namespace mlbridge {

struct GraphInput {
  const TensorSpec* spec;                        // name, dtype, shape (-1: symbolic)
  const std::vector<int64_t>* declared;          // dims as declared (-1: symbolic)
  const std::vector<std::string>* dimNames;      // dim_param per dim ("" if none); may be null
};

// featureOf[i]: the feature bound to graph input i.
Status bindInputs(const std::vector<GraphInput>& inputs, const std::vector<TensorSpec>& features,
                  std::vector<size_t>* featureOf);
// outputOf[a]: the graph output bound to advice a.
Status bindOutputs(const std::vector<TensorSpec>& outputs, const std::vector<TensorSpec>& advice,
                   std::vector<size_t>* outputOf);
// "'x' (float [1,24]), 'y' (int64_t [1])" for error messages; "none" if empty.
std::string specList(const std::vector<TensorSpec>& specs);

}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_GRAPH_BINDING_H
