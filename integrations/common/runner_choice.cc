#include "runner_choice.h"

#include "runner_kind.h"

#include <dlfcn.h>

#include <cstring>
#include <utility>

#include "mlbridge/pipe_runner.h"
#include "mlbridge/tfaot_runner.h"
#include "mlbridge/wire_format.h"
#ifdef MLBRIDGE_RUNNERS_HAVE_ENGINE
#include "mlbridge/aot_runner.h"
#include "mlbridge/onnx_runner.h"
#endif
#ifdef MLBRIDGE_RUNNERS_HAVE_ONNXRUNTIME
#include "mlbridge/onnxruntime_runner.h"
#endif
#ifdef MLBRIDGE_RUNNERS_HAVE_GRPC
#include "mlbridge/grpc_runner.h"
#endif

namespace mlbridge_integrations {

using mlbridge::ModelRunner;
using mlbridge::Status;
using mlbridge::StatusOr;
using mlbridge::TensorSpec;

std::string availableRunners() {
  std::string s;
#ifdef MLBRIDGE_RUNNERS_HAVE_ENGINE
  s += "onnx, aot, ";
#endif
#ifdef MLBRIDGE_RUNNERS_HAVE_ONNXRUNTIME
  s += "onnxruntime, ";
#endif
  s += "tfaot, pipe";
#ifdef MLBRIDGE_RUNNERS_HAVE_GRPC
  s += ", grpc";
#endif
  return s;
}

namespace {

// StatusOr<unique_ptr<Derived>> -> StatusOr<unique_ptr<ModelRunner>>.
template <class R>
StatusOr<std::unique_ptr<ModelRunner>> upcast(StatusOr<std::unique_ptr<R>> r) {
  if (!r.ok()) return r.status();
  return std::unique_ptr<ModelRunner>(std::move(*r));
}

// Unused when every runner is built in (libMLBridgeLLVMFull.so).
[[maybe_unused]] Status notBuilt(const std::string& runner, const char* how) {
  return mlbridge::failedPrecondition("runner '" + runner + "' is not built into this plugin (" + how +
                                      "); available: " + availableRunners());
}

// A compiled policy in a shared library (mlbridge-aot's .cc built with -shared
// -fPIC, or mlbridge_add_tf_aot_model(... MODULE)), so a deployed policy
// changes without rebuilding the plugin. The library stays loaded: its
// descriptor is static data. `runner` names the option in messages.
template <class Descriptor>
StatusOr<const Descriptor*> loadModelLibrary(const std::string& runner, const std::string& path,
                                             const std::string& symbol) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    return Status(mlbridge::StatusCode::kNotFound, runner + " runner: cannot load '" + path + "': " + (err ? err : "?"));
  }
  void* sym = dlsym(lib, symbol.c_str());
  if (!sym)
    return Status(mlbridge::StatusCode::kNotFound, runner + " runner: '" + path + "' has no symbol '" + symbol + "'");
  using ModelFn = const Descriptor* (*)();
  ModelFn fn;
  static_assert(sizeof(fn) == sizeof(sym), "function and data pointers differ in size");
  std::memcpy(&fn, &sym, sizeof(fn));  // POSIX: dlsym's result converts to a function pointer
  const Descriptor* model = fn();
  if (!model) return mlbridge::invalidArgument(runner + " runner: '" + symbol + "' returned no model");
  return model;
}

}  // namespace

StatusOr<std::unique_ptr<ModelRunner>> createRunner(const RunnerChoice& c, std::vector<TensorSpec> features,
                                                    std::vector<TensorSpec> advice) {
  const std::string& r = c.runner;
  RunnerKind kind = RunnerKind::kOnnx;  // set by parseRunnerKind, or the function returns
  if (!parseRunnerKind(r, &kind))
    return mlbridge::invalidArgument("unknown runner '" + r + "' (available: " + availableRunners() + ")");
  if (kind == RunnerKind::kOnnx || kind == RunnerKind::kOnnxRuntime) {
    if (c.model.empty())
      return Status(mlbridge::StatusCode::kNotFound,
                    r + " runner: no model file given (" + c.optionPrefix + "model=FILE.onnx)");
    if (kind == RunnerKind::kOnnx) {
#ifdef MLBRIDGE_RUNNERS_HAVE_ENGINE
      return upcast(mlbridge::NativeModelRunner::create(c.model, std::move(features), std::move(advice)));
#else
      return notBuilt(r, "configure with MLBRIDGE_WITH_ENGINE=ON");
#endif
    }
#ifdef MLBRIDGE_RUNNERS_HAVE_ONNXRUNTIME
    return upcast(mlbridge::OnnxRuntimeRunner::create(c.model, std::move(features), std::move(advice)));
#else
    return notBuilt(r, "use libMLBridgeLLVMFull.so, built when ONNX Runtime is found");
#endif
  }
  if (kind == RunnerKind::kAot) {
#ifdef MLBRIDGE_RUNNERS_HAVE_ENGINE
    const mlbridge_aot_model* model = c.embeddedAot;
    if (!c.model.empty()) {
      StatusOr<const mlbridge_aot_model*> loaded = loadModelLibrary<mlbridge_aot_model>(r, c.model, c.aotSymbol);
      if (!loaded.ok()) return loaded.status();
      model = *loaded;
    }
    if (!model)
      return mlbridge::failedPrecondition("aot runner: no policy compiled into this plugin: give " + c.optionPrefix +
                                          "model=LIB.so (mlbridge-aot output built with -shared), use "
                                          "libMLBridgeLLVMAot.so, or configure with -DMLBRIDGE_LLVM_AOT_MODEL=policy.onnx");
    return upcast(mlbridge::AotModelRunner::create(model, std::move(features), std::move(advice)));
#else
    return notBuilt(r, "configure with MLBRIDGE_WITH_ENGINE=ON");
#endif
  }
  if (kind == RunnerKind::kTfAot) {
    // Needs nothing but the library: XLA's code and its runtime are in it.
    if (c.model.empty())
      return Status(mlbridge::StatusCode::kNotFound,
                    "tfaot runner: no model library given (" + c.optionPrefix +
                        "model=LIB.so, built by mlbridge_add_tf_aot_model(... MODULE))");
    StatusOr<const mlbridge_tfaot_model*> loaded = loadModelLibrary<mlbridge_tfaot_model>(r, c.model, c.tfaotSymbol);
    if (!loaded.ok()) return loaded.status();
    return upcast(mlbridge::TfAotModelRunner::create(*loaded, std::move(features), std::move(advice)));
  }
  if (kind == RunnerKind::kPipe) {
    if (c.channel.empty())
      return mlbridge::invalidArgument("pipe runner: no channel base given");
    mlbridge::PipeOptions p;
    p.base = c.channel;
    p.timeoutMs = c.timeoutMs;
    p.connectTimeoutMs = c.timeoutMs;
    if (!c.format.empty() && !mlbridge::parseWireFormat(c.format, &p.format))
      return mlbridge::invalidArgument("pipe runner: unknown format '" + c.format + "' (bitstream, json, protobuf)");
    return upcast(mlbridge::PipeModelRunner::create(std::move(features), std::move(advice), p));
  }
  // The one kind left: grpc.
#ifdef MLBRIDGE_RUNNERS_HAVE_GRPC
  if (c.address.empty())
    return mlbridge::invalidArgument("grpc runner: no address given (" + c.optionPrefix + "address=HOST:PORT)");
  mlbridge::GrpcRunnerOptions g;
  g.address = c.address;
  g.deadlineMs = c.timeoutMs;
  g.retry.totalBudgetMs = c.timeoutMs;
  g.clientName = c.clientName;
  return upcast(mlbridge::GrpcModelRunner::create(std::move(features), std::move(advice), g));
#else
  return notBuilt(r, "use libMLBridgeLLVMFull.so, built when gRPC is found");
#endif
}

}  // namespace mlbridge_integrations
