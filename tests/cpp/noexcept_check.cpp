// Built with -fno-exceptions -fno-rtti, as LLVM and GCC plugins are: every
// public header must compile and work here.
#include "mlbridge/mlbridge.hpp"

int main() {
  using namespace mlbridge;
  std::vector<TensorSpec> in = {TensorSpec::create<int64_t>("a", {1}), TensorSpec::create<float>("b", {2})};
  TensorSpec out = TensorSpec::create<int64_t>("decision", {1});
  PipeOptions opts;
  opts.base = "/nonexistent-mlbridge-dir/channel";
  opts.connectTimeoutMs = 50;
  StatusOr<std::unique_ptr<PipeModelRunner>> r = PipeModelRunner::create(in, {out}, opts);
  // No model: a clear error value, no exception, no abort.
  if (r.ok()) return 1;
  if (r.status().code() != StatusCode::kUnavailable && r.status().code() != StatusCode::kNotFound) return 2;
  if (r.status().message().empty()) return 3;
  StatusOr<TensorSpec> spec = TensorSpec::fromJSON("{\"name\":\"x\",\"type\":\"float\",\"port\":0,\"shape\":[2]}");
  if (!spec.ok() || spec->type() != DType::kFloat32) return 4;
  StatusOr<TensorSpec> bad = TensorSpec::fromJSON("{nonsense");
  if (bad.ok()) return 5;
  return 0;
}
