#include "inline_runner.h"

#include <llvm/Support/CommandLine.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "callee_answers.h"
#include "embedded_aot_model.h"

namespace mlbridge_llvm {

namespace {

// Each option falls back to its MLBRIDGE_INLINE_* variable when not given.
llvm::cl::opt<std::string> runnerOpt("mlbridge-inline-runner",
                                     llvm::cl::desc("mlbridge ML inliner runner: none, onnx, aot, onnxruntime, tfaot, "
                                                    "pipe, grpc (env MLBRIDGE_INLINE_RUNNER)"));
llvm::cl::opt<std::string> modelOpt("mlbridge-inline-model",
                                    llvm::cl::desc("mlbridge ML inliner: .onnx policy, or for aot a shared library "
                                                   "built from mlbridge-aot output, for tfaot one built by "
                                                   "mlbridge_add_tf_aot_model (env MLBRIDGE_INLINE_MODEL)"));
llvm::cl::opt<std::string> aotSymbolOpt("mlbridge-inline-aot-symbol",
                                        llvm::cl::desc("mlbridge ML inliner, aot library: its <Name>_model function "
                                                       "(env MLBRIDGE_INLINE_AOT_SYMBOL, default "
                                                       "MLBridgeInlinerPolicy_model; tfaot: "
                                                       "MLBridgeInlinerPolicy_tfaot_model)"));
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

llvm::cl::opt<std::string> trainingLogOpt("mlbridge-inline-training-log",
                                          llvm::cl::desc("mlbridge ML inliner: write a training log in LLVM's format "
                                                         "to this file; without a runner, the stock heuristic "
                                                         "decides (env MLBRIDGE_INLINE_TRAINING_LOG)"));

llvm::cl::opt<std::string> flipOpt("mlbridge-inline-flip",
                                   llvm::cl::desc("mlbridge ML inliner: invert the answer (the runner's, or "
                                                  "without one the stock heuristic's) at these 0-based query "
                                                  "indices, e.g. 3,17 (env MLBRIDGE_INLINE_FLIP)"));

llvm::cl::opt<std::string> calleesOpt("mlbridge-inline-callees",
                                      llvm::cl::desc("mlbridge ML inliner: a file of NAME<TAB>0|1 lines; every call "
                                                     "of NAME gets that answer (env MLBRIDGE_INLINE_CALLEES)"));
llvm::cl::opt<std::string> traceOpt("mlbridge-inline-trace",
                                    llvm::cl::desc("mlbridge ML inliner: append caller<TAB>callee<TAB>answer per "
                                                   "query to this file (env MLBRIDGE_INLINE_TRACE)"));

std::string pick(const llvm::cl::opt<std::string>& opt, const char* env) {
  if (opt.getNumOccurrences() > 0) return opt;
  const char* v = std::getenv(env);
  return v ? std::string(v) : std::string();
}

// "3,17,42" -> {3, 17, 42}, sorted and unique; "" on success, else why not.
// At most kMaxFlips indices, each below 2^40: the list comes from a user.
std::string parseFlips(const std::string& text, std::vector<uint64_t>* out) {
  constexpr size_t kMaxFlips = 1 << 20;
  constexpr uint64_t kMaxIndex = uint64_t(1) << 40;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find(',', i);
    if (end == std::string::npos) end = text.size();
    if (end == i) return "empty index in -mlbridge-inline-flip";
    uint64_t v = 0;
    for (size_t k = i; k < end; ++k) {
      char ch = text[k];
      if (ch < '0' || ch > '9') return "-mlbridge-inline-flip: not a list of indices: " + text.substr(i, end - i);
      v = v * 10 + uint64_t(ch - '0');
      if (v >= kMaxIndex) return "-mlbridge-inline-flip: index too large: " + text.substr(i, end - i);
    }
    if (out->size() >= kMaxFlips) return "-mlbridge-inline-flip: more than 1048576 indices";
    out->push_back(v);
    i = end + 1;
    if (end + 1 == text.size()) return "empty index in -mlbridge-inline-flip";
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return "";
}

}  // namespace

InlineRunnerConfig inlineRunnerConfig() {
  InlineRunnerConfig c;
  RunnerChoice& r = c.choice;
  r.runner = pick(runnerOpt, "MLBRIDGE_INLINE_RUNNER");
  r.model = pick(modelOpt, "MLBRIDGE_INLINE_MODEL");
  r.aotSymbol = pick(aotSymbolOpt, "MLBRIDGE_INLINE_AOT_SYMBOL");
  r.tfaotSymbol = r.aotSymbol.empty() ? "MLBridgeInlinerPolicy_tfaot_model" : r.aotSymbol;
  if (r.aotSymbol.empty()) r.aotSymbol = "MLBridgeInlinerPolicy_model";
  r.channel = pick(channelOpt, "MLBRIDGE_INLINE_CHANNEL");
  r.format = pick(formatOpt, "MLBRIDGE_INLINE_FORMAT");
  r.address = pick(addressOpt, "MLBRIDGE_INLINE_ADDRESS");
  r.clientName = "mlbridge-llvm-inliner";
  r.embeddedAot = embeddedInlinerModel();
  r.optionPrefix = "-mlbridge-inline-";
  if (timeoutOpt.getNumOccurrences() > 0) {
    r.timeoutMs = timeoutOpt;
  } else if (const char* t = std::getenv("MLBRIDGE_INLINE_TIMEOUT_MS")) {
    char* end = nullptr;
    long v = std::strtol(t, &end, 10);
    if (end != t && *end == '\0' && v > 0 && v < (1L << 30)) r.timeoutMs = int(v);
  }
  if (statsOpt.getNumOccurrences() > 0) {
    c.stats = statsOpt;
  } else if (const char* s = std::getenv("MLBRIDGE_INLINE_STATS")) {
    c.stats = std::string(s) == "1";
  }
  c.trainingLog = pick(trainingLogOpt, "MLBRIDGE_INLINE_TRAINING_LOG");
  const std::string flips = pick(flipOpt, "MLBRIDGE_INLINE_FLIP");
  if (!flips.empty()) {
    c.flipsError = parseFlips(flips, &c.flips);
    if (!c.flipsError.empty()) c.flips.clear();
  }
  const std::string callees = pick(calleesOpt, "MLBRIDGE_INLINE_CALLEES");
  if (!callees.empty()) {
    c.calleesGiven = true;
    c.calleesError = readCalleeFile(callees, "-mlbridge-inline-callees", &c.callees);
    if (!c.calleesError.empty()) c.callees.clear();
  }
  c.trace = pick(traceOpt, "MLBRIDGE_INLINE_TRACE");
  return c;
}

}  // namespace mlbridge_llvm
