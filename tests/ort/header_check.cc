// Built with -fno-exceptions -fno-rtti, as LLVM and GCC plugins are: the ONNX
// Runtime runner's public header must compile and work there, and errors must
// come back as values.
#include "mlbridge/onnxruntime_runner.h"

#include <cstdio>

int main() {
  using namespace mlbridge;
  StatusOr<std::shared_ptr<const OnnxRuntimeModel>> m = OnnxRuntimeModel::load("/nonexistent-mlbridge-dir/model.onnx");
  if (m.ok() || m.status().code() != StatusCode::kNotFound) return 1;
  const char garbage[] = "this is not an ONNX model";
  StatusOr<std::unique_ptr<OnnxRuntimeRunner>> r = OnnxRuntimeRunner::create(
      "/nonexistent-mlbridge-dir/model.onnx", {TensorSpec::create<float>("x", {1})},
      {TensorSpec::create<float>("y", {1})});
  if (r.ok()) return 2;
  m = OnnxRuntimeModel::loadFromMemory(garbage, sizeof garbage);
  if (m.ok() || m.status().message().empty()) return 3;
  std::printf("ONNX Runtime %s, C API %d: %s\n", OnnxRuntimeModel::runtimeVersion().c_str(),
              OnnxRuntimeModel::apiVersion(), m.status().toString().c_str());
  return 0;
}
