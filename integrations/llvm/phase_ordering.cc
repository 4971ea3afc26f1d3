// POSET-RL style phase ordering (docs/phase-ordering.md):
//   opt -load-pass-plugin=libMLBridgeLLVM.so -passes=mlbridge-phase-order
//       -mlbridge-po-runner=onnx -mlbridge-po-model=policy.onnx in.ll -o out.ll
// Each step computes the module's features, asks the model for an action
// (an index into phase_ordering_actions.cc) and runs that pass subsequence
// with the new pass manager, until the step budget. Any model problem is a
// warning and the pass stops; the module stays as the last step left it.
#include <llvm/ADT/StringRef.h>
#include <llvm/ADT/Twine.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include <string>
#include <utility>
#include <vector>

#include "passes.h"
#include "phase_ordering_actions.h"
#include "phase_ordering_features.h"
#include "phase_ordering_runner.h"
#include "option_or_env.h"
#include "plugin_diagnostic.h"

namespace mlbridge_llvm {
namespace {

// Each option may also come from the environment (MLBRIDGE_PO_RUNNER, ...),
// e.g. under `clang -fpass-plugin=`, where plugin options are not parsed;
// the command line wins.
llvm::cl::opt<std::string> RunnerOpt("mlbridge-po-runner", llvm::cl::desc("phase ordering: onnx, aot, tfaot, pipe (also onnxruntime, grpc in libMLBridgeLLVMFull.so)"));
llvm::cl::opt<std::string> ModelOpt("mlbridge-po-model",
                                    llvm::cl::desc("phase ordering: .onnx file (onnx) or model library (aot)"));
llvm::cl::opt<std::string> AotSymbolOpt("mlbridge-po-aot-symbol",
                                        llvm::cl::desc("phase ordering: the aot library's <Name>_model function "
                                                       "(tfaot: <NAME>_tfaot_model)"));
llvm::cl::opt<std::string> PipeOpt("mlbridge-po-pipe", llvm::cl::desc("phase ordering: pipe channel base"));
llvm::cl::opt<std::string> FormatOpt("mlbridge-po-format",
                                     llvm::cl::desc("phase ordering: pipe format (bitstream, json, protobuf)"));
llvm::cl::opt<unsigned> StepsOpt("mlbridge-po-steps", llvm::cl::desc("phase ordering: step budget (default 10)"));
llvm::cl::opt<unsigned> TimeoutOpt("mlbridge-po-timeout-ms",
                                   llvm::cl::desc("phase ordering: pipe connect/reply bound (default 10000)"));
llvm::cl::opt<bool> VerifyOpt("mlbridge-po-verify", llvm::cl::desc("phase ordering: verify the module after each step"));
llvm::cl::opt<bool> TraceOpt("mlbridge-po-trace", llvm::cl::desc("phase ordering: print each step to stderr"));

#ifdef NDEBUG
constexpr bool kVerifyByDefault = false;
#else
constexpr bool kVerifyByDefault = true;
#endif

struct Settings {
  RunnerChoice runner;
  unsigned steps;
  bool verify;
  bool trace;
};

Settings readSettings() {
  Settings s;
  s.runner.model = pick(ModelOpt, "MLBRIDGE_PO_MODEL", "");
  s.runner.channel = pick(PipeOpt, "MLBRIDGE_PO_PIPE", "");
  // Without an explicit runner, a pipe base means pipe, anything else onnx.
  s.runner.runner = pick(RunnerOpt, "MLBRIDGE_PO_RUNNER", s.runner.channel.empty() ? "onnx" : "pipe");
  s.runner.aotSymbol = pick(AotSymbolOpt, "MLBRIDGE_PO_AOT_SYMBOL", "PhaseOrderPolicy_model");
  s.runner.tfaotSymbol = pick(AotSymbolOpt, "MLBRIDGE_PO_AOT_SYMBOL", "PhaseOrderPolicy_tfaot_model");
  s.runner.format = pick(FormatOpt, "MLBRIDGE_PO_FORMAT", "bitstream");
  s.runner.timeoutMs = static_cast<int>(pickUnsigned(TimeoutOpt, "MLBRIDGE_PO_TIMEOUT_MS", 10000));
  s.runner.clientName = "mlbridge-llvm-phase-order";
  s.runner.optionPrefix = "-mlbridge-po-";
  s.steps = pickUnsigned(StepsOpt, "MLBRIDGE_PO_STEPS", 10);
  s.verify = pickBool(VerifyOpt, "MLBRIDGE_PO_VERIFY", kVerifyByDefault);
  s.trace = pickBool(TraceOpt, "MLBRIDGE_PO_TRACE", false);
  return s;
}

void warn(llvm::Module& m, const std::string& msg) {
  m.getContext().diagnose(PluginDiagnostic("mlbridge-phase-order", msg, llvm::DS_Warning));
}

class PhaseOrderPass : public llvm::PassInfoMixin<PhaseOrderPass> {
 public:
  PhaseOrderPass(llvm::PassBuilder* pb, std::string tableError) : pb_(pb), tableError_(std::move(tableError)) {}

  static bool isRequired() { return true; }  // the model decides, even under optnone

  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& mam) {
    if (!tableError_.empty()) {
      warn(m, tableError_ + "; module left unchanged");
      return llvm::PreservedAnalyses::all();
    }
    Settings s = readSettings();
    auto runner = createRunner(s.runner, phaseOrderFeatureSpecs(), phaseOrderAdviceSpecs());
    if (!runner.ok()) {
      warn(m, "no model (" + runner.status().toString() + "); module left unchanged");
      return llvm::PreservedAnalyses::all();
    }
    mlbridge::ModelRunner& r = **runner;
    int64_t* features = r.getTensor<int64_t>(static_cast<size_t>(r.inputIndex(kPhaseOrderFeaturesName)));
    int64_t* step = r.getTensor<int64_t>(static_cast<size_t>(r.inputIndex(kPhaseOrderStepName)));
    bool changed = false;
    unsigned done = 0;
    mlbridge::Status st = r.setContext(m.getName());
    if (!st.ok()) warn(m, "model refused the episode (" + st.toString() + "); module left unchanged");
    for (; st.ok() && done < s.steps; ++done) {
      computePhaseOrderFeatures(m, features);
      *step = done;
      mlbridge::StatusOr<int64_t> action = r.evaluate<int64_t>();
      if (!action.ok()) {
        warn(m, "step " + std::to_string(done) + ": model error (" + action.status().toString() + "); stopped after " +
                    std::to_string(done) + " steps");
        break;
      }
      if (*action < 0 || *action >= static_cast<int64_t>(kNumPhaseOrderActions)) {
        warn(m, "step " + std::to_string(done) + ": action " + std::to_string(*action) + " out of range [0, " +
                    std::to_string(kNumPhaseOrderActions) + "); stopped after " + std::to_string(done) + " steps");
        break;
      }
      size_t a = static_cast<size_t>(*action);
      if (s.trace)
        llvm::errs() << "mlbridge-phase-order: " << m.getName() << " step " << done << ": instructions "
                     << features[kPhaseOrderInstructionsFeature] << ", action " << a << " ("
                     << phaseOrderActions()[a].name << ")\n";
      // Fresh pass objects each step: some module passes keep state between
      // runs (deadargelim's liveness maps point at functions it deleted, and
      // a second run of the same object crashes in LLVM 19). Parsing costs
      // microseconds next to the passes it builds.
      llvm::ModulePassManager mpm;
      if (llvm::Error e = pb_->parsePassPipeline(mpm, phaseOrderActions()[a].pipeline)) {
        warn(m, "action " + std::to_string(a) + " does not parse: " + llvm::toString(std::move(e)) + "; stopped");
        break;
      }
      // The nested manager invalidates `mam` after each of its passes, so
      // the analyses stay consistent between steps.
      mpm.run(m, mam);
      changed = true;
      if (s.verify && llvm::verifyModule(m, &llvm::errs())) {
        warn(m, "module does not verify after action " + std::to_string(a) + " (" + phaseOrderActions()[a].name +
                    "); stopped");
        ++done;
        break;
      }
    }
    if (s.trace) {
      computePhaseOrderFeatures(m, features);
      llvm::errs() << "mlbridge-phase-order: " << m.getName() << " done: " << done << " steps, instructions "
                   << features[kPhaseOrderInstructionsFeature] << "\n";
    }
    r.finish();  // best effort: the episode's result is the module either way
    return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
  }

 private:
  // The PassBuilder that parsed this pass: opt and clang keep it alive while
  // the pipeline runs, and it knows the target's and plugins' passes.
  llvm::PassBuilder* pb_;
  std::string tableError_;
};

// Checks the whole action table once, when the pipeline is parsed, so a
// table this LLVM cannot parse is reported before any step runs.
PhaseOrderPass buildPass(llvm::PassBuilder& pb) {
  for (size_t i = 0; i < kNumPhaseOrderActions; ++i) {
    llvm::ModulePassManager mpm;
    if (llvm::Error e = pb.parsePassPipeline(mpm, phaseOrderActions()[i].pipeline))
      return PhaseOrderPass(&pb, "action " + std::to_string(i) + " '" + phaseOrderActions()[i].pipeline +
                                     "' does not parse: " + llvm::toString(std::move(e)));
  }
  return PhaseOrderPass(&pb, "");
}

}  // namespace

void registerPhaseOrdering(llvm::PassBuilder& pb) {
  llvm::PassBuilder* builder = &pb;
  pb.registerPipelineParsingCallback(
      [builder](llvm::StringRef name, llvm::ModulePassManager& mpm, llvm::ArrayRef<llvm::PassBuilder::PipelineElement>) {
        if (name != "mlbridge-phase-order") return false;
        mpm.addPass(buildPass(*builder));
        return true;
      });
}

}  // namespace mlbridge_llvm
