// Fuzz target: a whole model from untrusted bytes: import (validation,
// shape inference, constant folding), compilation, then one evaluation with
// inputs filled from the same bytes (NaN, infinities and extreme integers
// included). Limits are lowered so that each run stays fast.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "mlbridge/onnx_runner.h"
#include "onnx_mutator.h"

MLBRIDGE_ONNX_CUSTOM_MUTATOR

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlbridge;
  OnnxLoadOptions options;
  options.maxTensorBytes = size_t(16) << 20;
  options.maxFoldedBytes = size_t(64) << 20;
  options.loadTimeoutMs = 5000;
  StatusOr<std::shared_ptr<const OnnxModel>> model = OnnxModel::loadFromMemory(data, size, options);
  if (!model.ok()) return 0;
  StatusOr<std::unique_ptr<NativeModelRunner>> runner =
      NativeModelRunner::create(*model, (*model)->inputs(), (*model)->outputs());
  if (!runner.ok()) return 0;
  ModelRunner& r = **runner;
  size_t k = 0;
  for (size_t i = 0; i < (*model)->inputs().size(); ++i) {
    unsigned char* p = static_cast<unsigned char*>(r.inputData(i));
    const size_t n = (*model)->inputs()[i].byteSize();
    for (size_t b = 0; b < n && size; ++b) p[b] = data[k++ % size];
    if ((*model)->inputs()[i].type() == DType::kBool)
      for (size_t b = 0; b < n; ++b) p[b] &= 1;
  }
  (void)r.evaluate();
  return 0;
}
