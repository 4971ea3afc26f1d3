// ONNX ModelDesc -> graph IR: validation of every node (operator, domain,
// attributes, dtypes, shapes), static shape inference, normalization of
// shape-like operands into attributes, constant folding and dead-node
// removal. Every error names the node (index in the file, name, op type).
#ifndef MLBRIDGE_SRC_ENGINE_IMPORT_H
#define MLBRIDGE_SRC_ENGINE_IMPORT_H

#include <chrono>
#include <string>
#include <vector>

#include "engine/graph.h"
#include "engine/onnx_proto.h"

namespace mlbridge {
namespace engine {

// Opsets of the default ONNX domain the engine knows: 13 (the oldest with
// today's input-based Squeeze/Unsqueeze/ReduceSum/Split) to 28 (onnx 1.23,
// checked op by op against the schemas; see docs/engine.md).
constexpr int64_t kMinOpset = 13;
constexpr int64_t kNewestOpset = 28;

struct ImportOptions {
  size_t maxTensorBytes = size_t(1) << 30;
  bool allowNewerOpsets = false;  // accept opsets above kNewestOpset
  // Budgets (OnnxLoadOptions): bytes of constants computed at import
  // (folding, ConstantOfShape, Range, ...), longest node chain, and the
  // moment import must give up (time_point::max(): never).
  size_t maxFoldedBytes = size_t(256) << 20;
  size_t maxGraphDepth = 10000;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// A runtime graph input as the file declares it.
struct InputDecl {
  std::string name;
  DType dtype = DType::kInvalid;
  std::vector<int64_t> dims;        // -1 where the dimension is symbolic or unknown
  std::vector<std::string> params;  // dim_param per dimension ("" if none)
};

// The graph inputs that are not initializers, validated (tensor type with a
// supported dtype and a known rank).
StatusOr<std::vector<InputDecl>> declaredInputs(const onnx::ModelDesc& model);

// Builds the IR with runtime input i bound to inputShapes[i] (static).
StatusOr<Graph> importGraph(const onnx::ModelDesc& model, const std::vector<Shape>& inputShapes,
                            const ImportOptions& options);

}  // namespace engine
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_ENGINE_IMPORT_H
