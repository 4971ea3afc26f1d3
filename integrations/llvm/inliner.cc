// ML inliner: LLVM's own MLInlineAdvisor (its 38 features, its bookkeeping)
// with the model behind any mlbridge runner, installed through LLVM's plugin
// inline-advisor hook (PluginInlineAdvisorAnalysis). Every inliner that goes
// through InlineAdvisorAnalysis uses it: the -O1..-O3/-Os/-Oz pipelines of
// opt and clang, `inliner-wrapper`, `scc-oz-module-inliner`. (A bare
// `cgscc(inline)` builds its own default advisor and never asks.)
//
// Nothing changes unless a runner is chosen (-mlbridge-inline-runner or
// MLBRIDGE_INLINE_RUNNER) or a training log asked for
// (-mlbridge-inline-training-log, docs/training-logs.md; without a runner the
// stock heuristic decides and is logged). Errors never stop the compilation:
//  * the runner cannot be created (missing model, wrong dtype, no peer):
//    one message on errs(), and the stock advisor decides everything;
//  * an evaluation fails (peer died, timeout): one message, and the stock
//    heuristic decides that call site and every later one.
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/BlockFrequencyInfo.h>
#include <llvm/Analysis/InlineAdvisor.h>
#include <llvm/Analysis/InlineCost.h>
#include <llvm/Analysis/InlineModelFeatureMaps.h>
#include <llvm/Analysis/MLInlineAdvisor.h>
#include <llvm/Analysis/NoInferenceModelRunner.h>
#include <llvm/Analysis/OptimizationRemarkEmitter.h>
#include <llvm/Analysis/ProfileSummaryInfo.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "inline_runner.h"
#include "inline_training_log.h"
#include "model_runner_adapter.h"
#include "module_analysis_registry.h"
#include "passes.h"

namespace mlbridge_llvm {

namespace {

// The two LLVM APIs this file is built against differ here: LLVM 19's
// MLInlineAdvisor takes a runner and reads the global llvm::FeatureMap; LLVM
// 22's takes a runner factory and owns its feature map, and shouldInline
// takes the callee's TTI.
#if LLVM_VERSION_MAJOR >= 22
const std::vector<llvm::TensorSpec>& inlinerFeatures() { return llvm::MLInlineAdvisor::getInitialFeatureMap(); }
#else
const std::vector<llvm::TensorSpec>& inlinerFeatures() { return llvm::FeatureMap; }
#endif

// The stock heuristic's yes/no for one call site: what LLVM's own
// getDefaultInlineAdvice (file-static in InlineAdvisor.cpp) computes.
bool stockAdvice(llvm::CallBase& cb, llvm::FunctionAnalysisManager& fam, const llvm::InlineParams& params) {
  llvm::Function& caller = *cb.getCaller();
  llvm::ProfileSummaryInfo* psi = fam.getResult<llvm::ModuleAnalysisManagerFunctionProxy>(caller)
                                      .getCachedResult<llvm::ProfileSummaryAnalysis>(*caller.getParent());
  auto& ore = fam.getResult<llvm::OptimizationRemarkEmitterAnalysis>(caller);
  auto getAC = [&](llvm::Function& f) -> llvm::AssumptionCache& { return fam.getResult<llvm::AssumptionAnalysis>(f); };
  auto getBFI = [&](llvm::Function& f) -> llvm::BlockFrequencyInfo& {
    return fam.getResult<llvm::BlockFrequencyAnalysis>(f);
  };
  auto getTLI = [&](llvm::Function& f) -> const llvm::TargetLibraryInfo& {
    return fam.getResult<llvm::TargetLibraryAnalysis>(f);
  };
  auto getCost = [&](llvm::CallBase& call) {
    llvm::Function& callee = *call.getCalledFunction();
    auto& tti = fam.getResult<llvm::TargetIRAnalysis>(callee);
    bool remarks = callee.getContext().getDiagHandlerPtr()->isMissedOptRemarkEnabled("inline");
    return llvm::getInlineCost(call, params, tti, getAC, getTLI, getBFI, psi, remarks ? &ore : nullptr);
  };
#if LLVM_VERSION_MAJOR >= 22
  auto& calleeTTI = fam.getResult<llvm::TargetIRAnalysis>(*cb.getCalledFunction());
  return llvm::shouldInline(cb, calleeTTI, getCost, ore, params.EnableDeferral.value_or(false)).has_value();
#else
  return llvm::shouldInline(cb, getCost, ore, params.EnableDeferral.value_or(false)).has_value();
#endif
}

// PATH with "{module}" replaced by a file-name-safe form of the module's
// identifier: in a ThinLTO link every backend writes its own training log.
// The tail of the identifier says which module; a hash of all of it keeps two
// modules with the same tail apart.
std::string perModulePath(const std::string& path, const llvm::Module& m) {
  static const std::string kPlaceholder = "{module}";
  const size_t at = path.find(kPlaceholder);
  if (at == std::string::npos) return path;
  const std::string& id = m.getModuleIdentifier();
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : id) hash = (hash ^ c) * 1099511628211ull;
  std::string tail = id.size() > 64 ? id.substr(id.size() - 64) : id;
  for (char& c : tail)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) c = '_';
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return path.substr(0, at) + tail + "-" + hex + path.substr(at + kPlaceholder.size());
}

// MLInlineAdvisor that asks the stock heuristic once its runner has failed,
// instead of reading the adapter's "do not inline" fallback, and that writes
// the training log when one is asked for.
class MLBridgeInlineAdvisor final : public llvm::MLInlineAdvisor {
 public:
  // `adapter` is `runner` as its concrete type, or nullptr when no model
  // decides (a training log of the stock heuristic: `runner` only holds the
  // features, as in LLVM's development mode without a model).
  MLBridgeInlineAdvisor(llvm::Module& m, llvm::ModuleAnalysisManager& mam, std::unique_ptr<llvm::MLModelRunner> runner,
                        MLBridgeModelRunner* adapter, std::function<bool(llvm::CallBase&)> getDefault, bool stats,
                        std::unique_ptr<InlineTrainingLog> log, std::vector<uint64_t> flips,
                        std::unordered_map<std::string, bool> callees, bool calleesGiven,
                        std::unique_ptr<llvm::raw_fd_ostream> trace)
#if LLVM_VERSION_MAJOR >= 22
      // The factory hands over the runner made for the initial feature map
      // (LLVM 22's optional IR2Vec embedding features are not supported).
      : llvm::MLInlineAdvisor(
            m, mam,
            [&runner](const std::vector<llvm::TensorSpec>&) -> std::unique_ptr<llvm::MLModelRunner> {
              return std::move(runner);
            },
            std::move(getDefault)),
#else
      : llvm::MLInlineAdvisor(m, mam, std::move(runner), std::move(getDefault)),
#endif
        adapter_(adapter),
        stats_(stats),
        log_(std::move(log)),
        flips_(std::move(flips)),
        callees_(std::move(callees)),
        calleesGiven_(calleesGiven),
        trace_(std::move(trace)) {
  }
  ~MLBridgeInlineAdvisor() override {
    // One write each (the trace, the report): in a ThinLTO link every backend
    // thread has its own advisor, and lines must not interleave.
    if (trace_) {
      trace_->write(traceLines_.data(), traceLines_.size());
      trace_->flush();
      if (trace_->has_error()) {
        llvm::errs() << "mlbridge: warning: ML inliner: writing the trace failed: " + trace_->error().message() +
                            "\n";
        trace_->clear_error();
      }
    }
    if (!stats_) return;
    std::string report;
    if (adapter_)
      report += "mlbridge: inliner: " + std::to_string(adapter_->evaluations()) + " model decisions, " +
                std::to_string(stockDecisions_) + " stock decisions after an error\n";
    if (log_) report += "mlbridge: inliner: " + std::to_string(log_->observations()) + " decisions logged\n";
    if (!flips_.empty())
      report += "mlbridge: inliner flips: " + std::to_string(nextFlip_) + " of " + std::to_string(queries_) +
                " answers flipped\n";
    if (calleesGiven_)
      report += "mlbridge: inliner callees: " + std::to_string(forced_) + " of " + std::to_string(queries_) +
                " answers set by callee\n";
    if (capped_)
      report += "mlbridge: inliner cap: " + std::to_string(capped_) +
                " call sites left out of line without asking: the module outgrew LLVM's ML inliner size cap "
                "(-ml-advisor-size-increase-threshold)\n";
    llvm::errs() << report;
  }

 protected:
  // Once the module's IR has grown past -ml-advisor-size-increase-threshold
  // times its start, MLInlineAdvisor stops asking and inlines nothing more but
  // mandatory calls (a guard against a runaway model). Counted here, so the
  // stats say when a policy (or the stock heuristic behind the plugin) was cut
  // short: -Oz itself has no such cap.
  std::unique_ptr<llvm::InlineAdvice> getAdviceImpl(llvm::CallBase& cb) override {
    const bool stopped = isForcedToStop();
    std::unique_ptr<llvm::InlineAdvice> advice = llvm::MLInlineAdvisor::getAdviceImpl(cb);
    if (stopped && advice && !advice->isInliningRecommended() && cb.getCaller() != cb.getCalledFunction() &&
        !cb.getCalledFunction()->hasFnAttribute(llvm::Attribute::NoInline))
      ++capped_;
    return advice;
  }

  std::unique_ptr<llvm::MLInlineAdvice> getAdviceFromModel(llvm::CallBase& cb,
                                                           llvm::OptimizationRemarkEmitter& ore) override {
    bool inlineIt = false;
    bool fromModel = false;
    if (adapter_) {
      inlineIt = ModelRunner->evaluate<int64_t>() != 0;
      fromModel = !adapter_->failed();
    }
    // The stock heuristic's answer costs an inline-cost analysis: only when
    // it decides or is logged.
    bool stock = false;
    if (!fromModel || log_) stock = GetDefaultAdvice(cb);
    if (!fromModel) {
      inlineIt = stock;
      if (adapter_) ++stockDecisions_;
    }
    // Flips: the answer (the model's, or the stock heuristic's without a
    // runner) inverted at the listed query indices.
    if (nextFlip_ < flips_.size() && flips_[nextFlip_] == queries_) {
      inlineIt = !inlineIt;
      ++nextFlip_;
    }
    ++queries_;
    if (!callees_.empty()) {
      // The callee's own line, else the "*" line (the answer for every callee not listed).
      auto it = callees_.find(cb.getCalledFunction()->getName().str());
      if (it == callees_.end()) it = callees_.find("*");
      if (it != callees_.end()) {
        inlineIt = it->second;
        ++forced_;
      }
    }
    if (trace_) {
      traceLines_ += cb.getCaller()->getName();
      traceLines_ += '\t';
      traceLines_ += cb.getCalledFunction()->getName();
      traceLines_ += inlineIt ? "\t1\n" : "\t0\n";
    }
    if (log_) log_->log(*ModelRunner, stock, inlineIt);
    return std::make_unique<llvm::MLInlineAdvice>(this, cb, ore, inlineIt);
  }

 private:
  MLBridgeModelRunner* adapter_;  // owned by ModelRunner; nullptr: the stock heuristic decides
  bool stats_;
  size_t stockDecisions_ = 0;
  std::unique_ptr<InlineTrainingLog> log_;
  std::vector<uint64_t> flips_;  // sorted query indices whose answer is inverted
  size_t nextFlip_ = 0;  // also: how many answers were flipped
  uint64_t queries_ = 0;
  std::unordered_map<std::string, bool> callees_;  // callee name -> the answer for all its call sites
  bool calleesGiven_;
  size_t forced_ = 0;
  size_t capped_ = 0;  // call sites refused without asking after the size cap
  std::unique_ptr<llvm::raw_fd_ostream> trace_;  // opened (append) when the advisor is made, written at its end
  std::string traceLines_;
};

llvm::InlineAdvisor* createAdvisor(llvm::Module& m, llvm::FunctionAnalysisManager& fam, llvm::InlineParams params,
                                   llvm::InlineContext ic) {
  auto stock = [&] { return new llvm::DefaultInlineAdvisor(m, fam, params, ic); };
  const InlineRunnerConfig config = inlineRunnerConfig();
  llvm::ModuleAnalysisManager* mam = findModuleAnalysisManager(m, fam);
  if (!mam) {
    llvm::errs() << "mlbridge: warning: ML inliner: no module analysis manager of this thread owns the function "
                    "analyses; using the stock inliner"
                 << (config.trainingLog.empty() ? "" : " (no training log)") << "\n";
    return stock();
  }
  if (!config.flipsError.empty()) {
    llvm::errs() << "mlbridge: warning: ML inliner: " << config.flipsError << "; using the stock inliner\n";
    return stock();
  }
  if (!config.calleesError.empty()) {
    llvm::errs() << "mlbridge: warning: ML inliner: " << config.calleesError << "; using the stock inliner\n";
    return stock();
  }
  std::unique_ptr<llvm::raw_fd_ostream> trace;
  if (!config.trace.empty()) {
    std::error_code ec;
    trace = std::make_unique<llvm::raw_fd_ostream>(config.trace, ec, llvm::sys::fs::OF_Append);
    if (ec) {
      llvm::errs() << "mlbridge: warning: ML inliner: cannot open the trace " << config.trace << ": " << ec.message()
                   << "; using the stock inliner\n";
      return stock();
    }
  }
  std::unique_ptr<InlineTrainingLog> log;
  if (!config.trainingLog.empty()) {
    std::string error;
    log = InlineTrainingLog::open(perModulePath(config.trainingLog, m), inlinerFeatures(), &error);
    if (!log) {
      llvm::errs() << "mlbridge: warning: ML inliner: " << error << "; no training log\n";
      if (!config.hasRunner() && config.flips.empty()) return stock();
    }
  }
  std::unique_ptr<llvm::MLModelRunner> runner;
  MLBridgeModelRunner* adapter = nullptr;
  if (config.hasRunner()) {
    const std::string what = "ML inliner (runner " + config.choice.runner + ")";
    const char* fallback = log ? "; the stock heuristic decides (and is logged)\n" : "; using the stock inliner\n";
    auto made = createRunner(config.choice, toMLBridgeSpecs(inlinerFeatures()),
                             {toMLBridgeSpec(llvm::InlineDecisionSpec)});
    if (!made.ok()) {
      llvm::errs() << "mlbridge: warning: " << what << ": " << made.status().toString() << fallback;
      if (!log) return stock();
    } else {
      auto wrapped = MLBridgeModelRunner::create(m.getContext(), std::move(*made), inlinerFeatures(),
                                                 llvm::InlineDecisionSpec, what);
      if (!wrapped.ok()) {
        llvm::errs() << "mlbridge: warning: " << wrapped.status().toString() << fallback;
        if (!log) return stock();
      } else {
        adapter = wrapped->get();
        runner = std::move(*wrapped);
      }
    }
  }
  if (!runner) runner = std::make_unique<llvm::NoInferenceModelRunner>(m.getContext(), inlinerFeatures());
  auto getDefault = [&fam, params](llvm::CallBase& cb) { return stockAdvice(cb, fam, params); };
  return new MLBridgeInlineAdvisor(m, *mam, std::move(runner), adapter, getDefault, config.stats, std::move(log),
                                   config.flips, config.callees, config.calleesGiven, std::move(trace));
}

}  // namespace

void registerInliner(llvm::PassBuilder& pb) {
  pb.registerAnalysisRegistrationCallback([](llvm::ModuleAnalysisManager& mam) {
    if (!inlineRunnerConfig().enabled()) return;
    registerModuleAnalysisAnchor(mam);
    mam.registerPass([] { return llvm::PluginInlineAdvisorAnalysis(createAdvisor); });
  });
}

}  // namespace mlbridge_llvm
