#include "phase_ordering_runner.h"

#include <dlfcn.h>

#include <cstring>

#include <utility>

#include "mlbridge/aot_runner.h"
#include "mlbridge/onnx_runner.h"
#include "mlbridge/pipe_runner.h"
#include "mlbridge/wire_format.h"
#include "phase_ordering_features.h"

namespace mlbridge_llvm {

using mlbridge::Status;
using mlbridge::StatusOr;
using mlbridge::TensorSpec;

std::vector<TensorSpec> phaseOrderFeatureSpecs() {
  return {TensorSpec::create<int64_t>(kPhaseOrderFeaturesName, {int64_t(kNumPhaseOrderFeatures)}),
          TensorSpec::create<int64_t>(kPhaseOrderStepName, {1})};
}

std::vector<TensorSpec> phaseOrderAdviceSpecs() { return {TensorSpec::create<int64_t>(kPhaseOrderActionName, {1})}; }

namespace {

template <class R>
StatusOr<std::unique_ptr<mlbridge::ModelRunner>> upcast(StatusOr<std::unique_ptr<R>> r) {
  if (!r.ok()) return r.status();
  return std::unique_ptr<mlbridge::ModelRunner>(std::move(*r));
}

// The AOT model lives in a shared library (mlbridge-aot's .cc built with
// -shared -fPIC): a plugin cannot have a policy linked in at the compiler's
// build time. The library stays loaded: its descriptor is static data.
StatusOr<const mlbridge_aot_model*> loadAotModel(const std::string& path, const std::string& symbol) {
  if (path.empty()) return Status(mlbridge::StatusCode::kNotFound, "aot runner: no model library given");
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    return Status(mlbridge::StatusCode::kNotFound, "aot runner: cannot load '" + path + "': " + (err ? err : "?"));
  }
  using ModelFn = const mlbridge_aot_model* (*)();
  void* sym = dlsym(lib, symbol.c_str());
  if (!sym)
    return Status(mlbridge::StatusCode::kNotFound, "aot runner: '" + path + "' has no symbol '" + symbol + "'");
  ModelFn fn;
  static_assert(sizeof(fn) == sizeof(sym), "function and data pointers differ in size");
  std::memcpy(&fn, &sym, sizeof(fn));  // POSIX: dlsym's result converts to a function pointer
  const mlbridge_aot_model* model = fn();
  if (!model) return mlbridge::invalidArgument("aot runner: '" + symbol + "' returned no model");
  return model;
}

}  // namespace

StatusOr<std::unique_ptr<mlbridge::ModelRunner>> createPhaseOrderRunner(const PhaseOrderRunnerOptions& o) {
  if (o.runner == "onnx") {
    if (o.model.empty()) return Status(mlbridge::StatusCode::kNotFound, "onnx runner: no model file given");
    return upcast(mlbridge::NativeModelRunner::create(o.model, phaseOrderFeatureSpecs(), phaseOrderAdviceSpecs()));
  }
  if (o.runner == "aot") {
    StatusOr<const mlbridge_aot_model*> model = loadAotModel(o.model, o.aotSymbol);
    if (!model.ok()) return model.status();
    return upcast(mlbridge::AotModelRunner::create(*model, phaseOrderFeatureSpecs(), phaseOrderAdviceSpecs()));
  }
  if (o.runner == "pipe") {
    mlbridge::PipeOptions p;
    p.base = o.pipe;
    if (p.base.empty()) return mlbridge::invalidArgument("pipe runner: no channel base given");
    if (!mlbridge::parseWireFormat(o.format, &p.format))
      return mlbridge::invalidArgument("pipe runner: unknown format '" + o.format + "' (bitstream, json, protobuf)");
    p.timeoutMs = o.timeoutMs;
    p.connectTimeoutMs = o.timeoutMs;
    return upcast(mlbridge::PipeModelRunner::create(phaseOrderFeatureSpecs(), phaseOrderAdviceSpecs(), p));
  }
  return mlbridge::invalidArgument("unknown runner '" + o.runner + "' (onnx, aot, pipe)");
}

}  // namespace mlbridge_llvm
