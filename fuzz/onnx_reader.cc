// Fuzz target: the ONNX ModelProto reader (src/engine/onnx_proto.cc).
#include <cstddef>
#include <cstdint>

#include "engine/onnx_proto.h"
#include "onnx_mutator.h"

MLBRIDGE_ONNX_CUSTOM_MUTATOR

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlbridge::engine;
  onnx::ReadOptions options;
  options.maxTensorBytes = size_t(64) << 20;
  (void)onnx::readModel(data, size, options);
  return 0;
}
