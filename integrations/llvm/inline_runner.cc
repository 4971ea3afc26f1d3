#include "inline_runner.h"

#include <llvm/Support/CommandLine.h>

#include <cstdlib>
#include <utility>

#include "embedded_aot_model.h"
#include "mlbridge/pipe_runner.h"
#ifdef MLBRIDGE_LLVM_HAVE_ENGINE
#include "mlbridge/aot_runner.h"
#include "mlbridge/onnx_runner.h"
#endif
#include "mlbridge/wire_format.h"
#ifdef MLBRIDGE_LLVM_HAVE_ONNXRUNTIME
#include "mlbridge/onnxruntime_runner.h"
#endif
#ifdef MLBRIDGE_LLVM_HAVE_GRPC
#include "mlbridge/grpc_runner.h"
#endif

namespace mlbridge_llvm {

namespace {

// Each option falls back to its MLBRIDGE_INLINE_* variable when not given.
llvm::cl::opt<std::string> runnerOpt("mlbridge-inline-runner",
                                     llvm::cl::desc("mlbridge ML inliner runner: none, onnx, aot, onnxruntime, pipe, "
                                                    "grpc (env MLBRIDGE_INLINE_RUNNER)"));
llvm::cl::opt<std::string> modelOpt("mlbridge-inline-model",
                                    llvm::cl::desc("mlbridge ML inliner: .onnx policy (env MLBRIDGE_INLINE_MODEL)"));
llvm::cl::opt<std::string> channelOpt("mlbridge-inline-channel",
                                      llvm::cl::desc("mlbridge ML inliner, pipe runner: channel base "
                                                     "(env MLBRIDGE_INLINE_CHANNEL)"));
llvm::cl::opt<std::string> formatOpt("mlbridge-inline-format",
                                     llvm::cl::desc("mlbridge ML inliner, pipe runner: bitstream, json or protobuf "
                                                    "(env MLBRIDGE_INLINE_FORMAT)"));
llvm::cl::opt<std::string> addressOpt("mlbridge-inline-address",
                                      llvm::cl::desc("mlbridge ML inliner, grpc runner: host:port "
                                                     "(env MLBRIDGE_INLINE_ADDRESS)"));
llvm::cl::opt<int> timeoutOpt("mlbridge-inline-timeout-ms",
                              llvm::cl::desc("mlbridge ML inliner: bound on each remote decision and on "
                                             "connecting (env MLBRIDGE_INLINE_TIMEOUT_MS, default 10000)"));
llvm::cl::opt<bool> statsOpt("mlbridge-inline-stats",
                             llvm::cl::desc("mlbridge ML inliner: print the number of model decisions "
                                            "(env MLBRIDGE_INLINE_STATS=1)"));

std::string pick(const llvm::cl::opt<std::string>& opt, const char* env) {
  if (opt.getNumOccurrences() > 0) return opt;
  const char* v = std::getenv(env);
  return v ? std::string(v) : std::string();
}

}  // namespace

InlineRunnerConfig inlineRunnerConfig() {
  InlineRunnerConfig c;
  c.runner = pick(runnerOpt, "MLBRIDGE_INLINE_RUNNER");
  c.model = pick(modelOpt, "MLBRIDGE_INLINE_MODEL");
  c.channel = pick(channelOpt, "MLBRIDGE_INLINE_CHANNEL");
  c.format = pick(formatOpt, "MLBRIDGE_INLINE_FORMAT");
  c.address = pick(addressOpt, "MLBRIDGE_INLINE_ADDRESS");
  if (timeoutOpt.getNumOccurrences() > 0) {
    c.timeoutMs = timeoutOpt;
  } else if (const char* t = std::getenv("MLBRIDGE_INLINE_TIMEOUT_MS")) {
    char* end = nullptr;
    long v = std::strtol(t, &end, 10);
    if (end != t && *end == '\0' && v > 0 && v < (1L << 30)) c.timeoutMs = int(v);
  }
  if (statsOpt.getNumOccurrences() > 0) {
    c.stats = statsOpt;
  } else if (const char* s = std::getenv("MLBRIDGE_INLINE_STATS")) {
    c.stats = std::string(s) == "1";
  }
  return c;
}

std::string availableInlineRunners() {
  std::string s;
#ifdef MLBRIDGE_LLVM_HAVE_ENGINE
  s += "onnx, ";
  if (embeddedInlinerModel()) s += "aot, ";
#endif
#ifdef MLBRIDGE_LLVM_HAVE_ONNXRUNTIME
  s += "onnxruntime, ";
#endif
  s += "pipe";
#ifdef MLBRIDGE_LLVM_HAVE_GRPC
  s += ", grpc";
#endif
  return s;
}

namespace {

// StatusOr<unique_ptr<Derived>> -> StatusOr<unique_ptr<ModelRunner>>.
template <class R>
mlbridge::StatusOr<std::unique_ptr<mlbridge::ModelRunner>> upcast(mlbridge::StatusOr<std::unique_ptr<R>> r) {
  if (!r.ok()) return r.status();
  return std::unique_ptr<mlbridge::ModelRunner>(std::move(*r));
}

mlbridge::Status notBuilt(const std::string& runner, const char* how) {
  return mlbridge::failedPrecondition("runner '" + runner + "' is not built into this plugin (" + how +
                                      "); available: " + availableInlineRunners());
}

}  // namespace

mlbridge::StatusOr<std::unique_ptr<mlbridge::ModelRunner>> createInlineRunner(
    const InlineRunnerConfig& config, std::vector<mlbridge::TensorSpec> features, mlbridge::TensorSpec advice) {
  const std::string& r = config.runner;
  std::vector<mlbridge::TensorSpec> outputs{std::move(advice)};
  if (r == "onnx" || r == "onnxruntime") {
    if (config.model.empty())
      return mlbridge::invalidArgument("runner '" + r + "' needs -mlbridge-inline-model=FILE.onnx");
    if (r == "onnx") {
#ifdef MLBRIDGE_LLVM_HAVE_ENGINE
      return upcast(mlbridge::NativeModelRunner::create(config.model, std::move(features), outputs));
#else
      return notBuilt(r, "configure with MLBRIDGE_WITH_ENGINE=ON");
#endif
    }
#ifdef MLBRIDGE_LLVM_HAVE_ONNXRUNTIME
    return upcast(mlbridge::OnnxRuntimeRunner::create(config.model, std::move(features), outputs));
#else
    return notBuilt(r, "configure with ONNX Runtime found");
#endif
  }
  if (r == "aot") {
    const mlbridge_aot_model* model = embeddedInlinerModel();
    if (!model) return notBuilt(r, "configure with -DMLBRIDGE_LLVM_AOT_MODEL=policy.onnx, or use libMLBridgeLLVMAot.so");
#ifdef MLBRIDGE_LLVM_HAVE_ENGINE
    return upcast(mlbridge::AotModelRunner::create(model, std::move(features), outputs));
#endif
  }
  if (r == "pipe") {
    if (config.channel.empty())
      return mlbridge::invalidArgument("runner 'pipe' needs -mlbridge-inline-channel=BASE");
    mlbridge::PipeOptions opts;
    opts.base = config.channel;
    opts.timeoutMs = config.timeoutMs;
    opts.connectTimeoutMs = config.timeoutMs;
    if (!config.format.empty() && !mlbridge::parseWireFormat(config.format, &opts.format))
      return mlbridge::invalidArgument("unknown format '" + config.format + "' (bitstream, json, protobuf)");
    return upcast(mlbridge::PipeModelRunner::create(std::move(features), outputs, opts));
  }
  if (r == "grpc") {
#ifdef MLBRIDGE_LLVM_HAVE_GRPC
    if (config.address.empty())
      return mlbridge::invalidArgument("runner 'grpc' needs -mlbridge-inline-address=HOST:PORT");
    mlbridge::GrpcRunnerOptions opts;
    opts.address = config.address;
    opts.deadlineMs = config.timeoutMs;
    opts.retry.totalBudgetMs = config.timeoutMs;
    opts.clientName = "mlbridge-llvm-inliner";
    return upcast(mlbridge::GrpcModelRunner::create(std::move(features), outputs, opts));
#else
    return notBuilt(r, "configure with gRPC found");
#endif
  }
  return mlbridge::invalidArgument("unknown runner '" + r + "'; available: " + availableInlineRunners());
}

}  // namespace mlbridge_llvm
