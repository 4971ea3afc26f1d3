// A minimal reader for ONNX's ModelProto (onnx/onnx.proto, proto2 syntax),
// built on the hand-written protobuf wire helpers (src/wire/protobuf_wire.h):
// no libprotobuf, no libonnx. It keeps only what inference needs: opset
// imports, the main graph's nodes / attributes / initializers / inputs /
// outputs. Everything else (doc strings, metadata, value_info, training info)
// is skipped. Subgraph attributes (If/Loop bodies) are recognized and
// skipped: no op the engine supports has one. Tensor payloads are decoded
// into aligned engine buffers while reading; external data is read from files
// next to the model when a folder is given. See docs/engine.md.
#ifndef MLBRIDGE_SRC_ENGINE_ONNX_PROTO_H
#define MLBRIDGE_SRC_ENGINE_ONNX_PROTO_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/common.h"
#include "mlbridge/status.h"

namespace mlbridge {
namespace engine {
namespace onnx {

// TensorProto.DataType values.
enum OnnxType : int32_t {
  kOnnxUndefined = 0,
  kOnnxFloat = 1,
  kOnnxUInt8 = 2,
  kOnnxInt8 = 3,
  kOnnxUInt16 = 4,
  kOnnxInt16 = 5,
  kOnnxInt32 = 6,
  kOnnxInt64 = 7,
  kOnnxString = 8,
  kOnnxBool = 9,
  kOnnxFloat16 = 10,
  kOnnxDouble = 11,
  kOnnxUInt32 = 12,
  kOnnxUInt64 = 13,
};

// The engine dtype of an ONNX element type; kInvalid if unsupported.
DType dtypeFromOnnx(int32_t onnxType);
// "FLOAT16", "BFLOAT16", ... (for messages); "type 42" for unknown numbers.
std::string onnxTypeName(int32_t onnxType);

// AttributeProto.AttributeType values.
enum class AttrType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kInt = 2,
  kString = 3,
  kTensor = 4,
  kGraph = 5,
  kFloats = 6,
  kInts = 7,
  kStrings = 8,
  kTensors = 9,
  kGraphs = 10,
  kSparseTensor = 11,
  kSparseTensors = 12,
  kTypeProto = 13,
  kTypeProtos = 14,
};
const char* attrTypeName(AttrType t);

struct AttributeDesc {
  std::string name;
  AttrType type = AttrType::kUndefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  bool hasTensor = false;
  Tensor t;                  // decoded when hasTensor
  Status tensorStatus;       // why `t` could not be decoded (unsupported dtype, ...)
  std::string refAttrName;   // set inside functions only; refused by the importer
};

struct NodeDesc {
  std::string name, opType, domain;
  std::vector<std::string> inputs, outputs;  // "" = omitted optional
  std::vector<AttributeDesc> attributes;
};

struct DimDesc {
  bool hasValue = false;
  int64_t value = 0;
  std::string param;  // dim_param ("batch"), may be empty for an unknown dim
};

struct ValueInfoDesc {
  std::string name;
  bool isTensor = false;  // TypeProto.tensor_type present
  int32_t elemType = 0;
  bool hasShape = false;
  std::vector<DimDesc> dims;
};

struct InitializerDesc {
  std::string name;
  Tensor tensor;
  Status status;  // non-OK: the payload could not be decoded (reported if used)
};

struct GraphDesc {
  std::string name;
  std::vector<NodeDesc> nodes;
  std::vector<InitializerDesc> initializers;
  std::vector<ValueInfoDesc> inputs, outputs;
  bool hasSparseInitializers = false;
};

struct ModelDesc {
  int64_t irVersion = 0;
  std::vector<std::pair<std::string, int64_t>> opsetImports;  // (domain, version)
  std::string producerName, producerVersion;
  bool hasGraph = false;
  GraphDesc graph;
  bool hasFunctions = false;  // model-local functions (not supported)
};

struct ReadOptions {
  size_t maxTensorBytes = size_t(1) << 30;
  // Folder that external-data paths are relative to; empty refuses external data.
  std::string externalDataDir;
};

// Parses a serialized ModelProto. Errors: kDataLoss for malformed protobuf,
// kInvalidArgument for inconsistent tensors, kUnimplemented for features
// the engine does not support, naming what was being read.
StatusOr<ModelDesc> readModel(const void* data, size_t size, const ReadOptions& options);

// Reads a whole file (bounded by maxBytes) into `out`.
Status readFile(const std::string& path, size_t maxBytes, std::string* out);

}  // namespace onnx
}  // namespace engine
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_ENGINE_ONNX_PROTO_H
