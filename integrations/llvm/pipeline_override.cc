// A pass order in place of the -Oz pipeline, inside clang (docs/tuning.md,
// docs/phase-ordering-policy.md):
//   clang-19 -Oz -fplugin=libMLBridgeLLVM.so -fpass-plugin=libMLBridgeLLVM.so
//            -mllvm -mlbridge-tuning=program.tuning.json -c x.c
// A tuning file (written by `mlbridge tune`) maps source files to pass
// pipelines; `-mlbridge-po-pipeline=TEXT` gives one pipeline for every module
// (what the tuner's candidates use); `-mlbridge-po-policy=FILE` (from
// `mlbridge train orders`) names a few orders for any module: each is compiled
// in-process beside -Oz and the smallest object wins (-Oz on a tie), so no
// module grows. Precedence: pipeline, then the tuning file's entry for the
// module, then the policy. A tuning file's entry may also give per-callee
// inlining answers ("callees"; `-mlbridge-po-callees=FILE` beside a pipeline
// given), applied as attributes while the module's pipeline runs
// (callee_answers.h). At the start of the optimization
// pipeline the module's pipeline runs, then every optional pass of the
// default pipeline is skipped through the pass-instrumentation hook (required
// passes such as the always-inliner still run; code generation is clang's
// own, untouched). A module the file does not name compiles as usual.
//
// Never half-applied: a file that cannot be read, is damaged, was written for
// another LLVM major version or names a pass this LLVM cannot parse is an
// error for every compile that loads it (the build refuses), checked before
// any pass runs. A module that does not verify afterwards is an error too.
#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassInstrumentation.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "callee_answers.h"
#include "module_transplant.h"
#include "object_size.h"
#include "pass_builder_access.h"
#include "option_or_env.h"
#include "order_policy.h"
#include "passes.h"
#include "phase_ordering_features.h"
#include "plugin_diagnostic.h"
#include "plugin_file.h"

namespace mlbridge_llvm {
namespace {

llvm::cl::opt<std::string> PipelineOpt("mlbridge-po-pipeline",
                                       llvm::cl::desc("run this pass pipeline in place of the -O pipeline "
                                                      "(every module; env MLBRIDGE_PO_PIPELINE)"));
llvm::cl::opt<std::string> CalleesOpt("mlbridge-po-callees",
                                      llvm::cl::desc("with -mlbridge-po-pipeline: a file of NAME<TAB>0|1 lines; every "
                                                     "call of NAME is inlined (1) or not (0) while the pipeline runs "
                                                     "(env MLBRIDGE_PO_CALLEES)"));
llvm::cl::opt<std::string> TuningOpt("mlbridge-tuning",
                                     llvm::cl::desc("tuning file from `mlbridge tune`: per source file, a pass "
                                                    "pipeline in place of the -O pipeline (env MLBRIDGE_TUNING)"));
llvm::cl::opt<bool> TuningTraceOpt("mlbridge-tuning-trace",
                                   llvm::cl::desc("print the module's source file and what was applied "
                                                  "(env MLBRIDGE_TUNING_TRACE=1)"));

llvm::cl::opt<std::string> PolicyOpt("mlbridge-po-policy",
                                     llvm::cl::desc("order policy from `mlbridge train orders`: its orders are compiled "
                                                    "beside -Oz, the smallest object is kept (env MLBRIDGE_PO_POLICY)"));
llvm::cl::opt<unsigned> TriesOpt("mlbridge-po-tries",
                                 llvm::cl::desc("order policy: orders tried per module besides -Oz (default: the "
                                                "file's; env MLBRIDGE_PO_TRIES)"));
llvm::cl::opt<bool> MeasureOpt("mlbridge-po-measure",
                               llvm::cl::desc("order policy: try every order of the file and print each one's size "
                                              "(training labels; env MLBRIDGE_PO_MEASURE=1)"));

// the tuning file's format and the one version this plugin reads
constexpr const char* kFormat = "mlbridge-tuning";
constexpr int64_t kVersion = 1;
// a tuning file larger than this is not one `mlbridge tune` wrote
constexpr uint64_t kMaxFileBytes = 64ull << 20;

// An error stops the build (the compiler exits non-zero): a tuning file is never half-applied.
void fail(llvm::LLVMContext& ctx, const std::string& msg) {
  ctx.diagnose(PluginDiagnostic("mlbridge-tuning", msg, llvm::DS_Error));
}

// Source paths compare as absolute, dot-free paths: a build that ran in
// another folder, or gave the file as ../src/x.c, still finds its entry.
std::string normalizedSource(llvm::StringRef source) {
  llvm::SmallString<256> p(source);
  llvm::sys::fs::make_absolute(p);  // best effort: a failure keeps the path as given
  llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/true);
  return std::string(p.str());
}

// KEY names PATH when it is PATH itself or a trailing run of its components.
bool keyNames(llvm::StringRef path, llvm::StringRef key) {
  if (key.empty() || !path.ends_with(key)) return false;
  if (path.size() == key.size()) return true;
  return path[path.size() - key.size() - 1] == '/';
}

// The tuning file, read and checked once per process (a compiler compiles
// one module; a linker's LTO backends share it read-only).
struct TuningEntry {
  std::string pipeline;
  CalleeAnswers callees;  // empty: the order's inliners decide alone
};

struct TuningFile {
  std::string path;
  std::string error;                           // non-empty: the file is refused
  std::map<std::string, TuningEntry> entries;  // source key -> what to apply

  // The longest key naming SOURCE; nullptr when none does.
  const TuningEntry* find(llvm::StringRef source, std::string* key) const {
    const TuningEntry* best = nullptr;
    for (const auto& [k, entry] : entries) {
      if (keyNames(source, k) && (!best || k.size() > key->size())) {
        best = &entry;
        *key = k;
      }
    }
    return best;
  }
};

// An entry's "callees": {"NAME": 0|1, ...}; "" or why it is damaged.
std::string readEntryCallees(const llvm::json::Object& e, const std::string& key, size_t* total, CalleeAnswers* out) {
  const llvm::json::Value* v = e.get("callees");
  if (!v) return "";
  const llvm::json::Object* callees = v->getAsObject();
  if (!callees) return "damaged (module '" + key + "': \"callees\" is not an object)";
  for (const auto& [name, answer] : *callees) {
    std::optional<int64_t> a = answer.getAsInteger();
    if (llvm::StringRef(name).empty() || llvm::StringRef(name).size() > kMaxCalleeName || !a || (*a != 0 && *a != 1))
      return "damaged (module '" + key + "': callee '" + name.str() + "' needs the answer 0 or 1)";
    if (++*total > kMaxCallees) return "damaged (more than 1048576 callees)";
    (*out)[name.str()] = *a == 1;
  }
  return "";
}

std::string loadInto(TuningFile& tf, PipelineParser parse) {
  llvm::json::Value value(nullptr);
  std::string refused =
      readPluginFile(tf.path, {kFormat, "a tuning file", kVersion, "tune again", kMaxFileBytes}, &value);
  if (!refused.empty()) return refused;
  const llvm::json::Object* root = value.getAsObject();
  const llvm::json::Object* modules = root->getObject("modules");
  if (!modules) return "damaged (no \"modules\" object)";
  size_t callees = 0;
  for (const auto& [key, entry] : *modules) {
    const llvm::json::Object* e = entry.getAsObject();
    std::optional<llvm::StringRef> text = e ? e->getString("pipeline") : std::nullopt;
    if (!text) return "damaged (module '" + key.str() + "' has no \"pipeline\" string)";
    if (llvm::StringRef(key).empty() || llvm::StringRef(key).starts_with("/"))
      return "damaged (module key '" + key.str() + "' is not a relative path)";
    llvm::ModulePassManager check;
    if (llvm::Error e2 = parse(check, *text))
      return "module '" + key.str() + "': its pipeline does not parse with this LLVM: " + llvm::toString(std::move(e2));
    TuningEntry& te = tf.entries[key.str()];
    te.pipeline = text->str();
    std::string bad = readEntryCallees(*e, key.str(), &callees, &te.callees);
    if (!bad.empty()) return bad;
  }
  return "";
}

// Shared by the pass and the instrumentation hook of one PassBuilder.
struct OverrideState {
  llvm::PassBuilder* pb = nullptr;
  bool hooked = false;  // the PassBuilder has instrumentation to skip passes with
  bool skipRest = false;
  bool running = false;  // the module's pipeline is running (it may contain default<Oz>)
  std::unique_ptr<TuningFile> tuning;
  std::unique_ptr<OrderPolicy> policy;
  // clang's tuning options, kept at registration: parsing "default<Oz>"
  // rewrites the PassBuilder's (pass_builder_access.h)
  llvm::PipelineTuningOptions clangTuning;

  // Every pipeline this plugin builds goes through these two, so the
  // PassBuilder's tuning options are clang's whenever clang's -Oz is built.
  // Parses TEXT into MPM and puts clang's tuning options back.
  llvm::Error parse(llvm::ModulePassManager& mpm, llvm::StringRef text) {
    llvm::Error e = pb->parsePassPipeline(mpm, text);
    tuningOptionsOf(*pb) = clangTuning;
    return e;
  }
  // parse() as a callable for the file loaders (a PipelineParser, a function_ref,
  // refers to it: it lives until the end of the loader's call)
  auto parser() {
    return [this](llvm::ModulePassManager& mpm, llvm::StringRef text) { return parse(mpm, text); };
  }
  // clang's own -Oz pipeline (not "default<Oz>", which is opt's: no SLP vectorizer).
  llvm::ModulePassManager clangOz() {
    tuningOptionsOf(*pb) = clangTuning;
    return pb->buildPerModuleDefaultPipeline(llvm::OptimizationLevel::Oz);
  }
};

const TuningFile& tuningFile(OverrideState& st, const std::string& path) {
  if (!st.tuning || st.tuning->path != path) {
    st.tuning = std::make_unique<TuningFile>();
    st.tuning->path = path;
    st.tuning->error = loadInto(*st.tuning, st.parser());
  }
  return *st.tuning;
}

OrderPolicy& orderPolicy(OverrideState& st, const std::string& path) {
  if (!st.policy || st.policy->path() != path)
    st.policy = OrderPolicy::load(path, st.parser());
  return *st.policy;
}

void warnPolicy(llvm::LLVMContext& ctx, const std::string& msg) {
  ctx.diagnose(PluginDiagnostic("mlbridge-po-policy", msg, llvm::DS_Warning));
}

class PipelineOverridePass : public llvm::PassInfoMixin<PipelineOverridePass> {
 public:
  explicit PipelineOverridePass(std::shared_ptr<OverrideState> st) : st_(std::move(st)) {}
  static bool isRequired() { return true; }

  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager& mam) {
    // A pipeline that names default<Oz> runs this pass again inside: leave it be.
    if (st_->running) return llvm::PreservedAnalyses::all();
    std::string text = pick(PipelineOpt, "MLBRIDGE_PO_PIPELINE", "");
    std::string file = pick(TuningOpt, "MLBRIDGE_TUNING", "");
    std::string policy = pick(PolicyOpt, "MLBRIDGE_PO_POLICY", "");
    bool trace = pickBool(TuningTraceOpt, "MLBRIDGE_TUNING_TRACE", false);
    llvm::LLVMContext& ctx = m.getContext();
    std::string source = normalizedSource(m.getSourceFileName());
    if (text.empty() && file.empty() && policy.empty()) {
      // the tuner reads each module's source path from this line
      if (trace) llvm::errs() << "mlbridge-tuning: source " << source << ": default pipeline\n";
      return llvm::PreservedAnalyses::all();
    }
    std::string what = "the pipeline given";
    CalleeAnswers given;
    const CalleeAnswers* callees = &given;
    if (!text.empty()) {
      std::string calleeFile = pick(CalleesOpt, "MLBRIDGE_PO_CALLEES", "");
      std::string bad = calleeFile.empty() ? "" : readCalleeFile(calleeFile, "-mlbridge-po-callees", &given);
      if (!bad.empty()) {
        fail(ctx, bad);
        return llvm::PreservedAnalyses::all();
      }
    } else if (!file.empty()) {
      const TuningFile& tf = tuningFile(*st_, file);
      if (!tf.error.empty()) {
        fail(ctx, file + ": " + tf.error);
        return llvm::PreservedAnalyses::all();
      }
      std::string key;
      if (const TuningEntry* found = tf.find(source, &key)) {
        text = found->pipeline;
        callees = &found->callees;
        what = "entry '" + key + "'";
      } else if (policy.empty()) {
        if (trace) llvm::errs() << "mlbridge-tuning: source " << source << ": not in the file, default pipeline\n";
        return llvm::PreservedAnalyses::all();
      }
    }
    if (!st_->hooked) {
      fail(ctx, "this compiler gives plugins no pass instrumentation, so the default pipeline cannot be replaced");
      return llvm::PreservedAnalyses::all();
    }
    if (text.empty()) {
      // the policy: -Oz unless one of its orders compiles smaller
      if (!applyPolicy(m, mam, policy, source, trace)) return llvm::PreservedAnalyses::all();
      st_->skipRest = true;  // the module holds the winner's optimized code
      return llvm::PreservedAnalyses::none();
    }
    // Parsed afresh for this module: some module passes keep state between runs.
    llvm::ModulePassManager mpm;
    if (llvm::Error e = st_->parse(mpm, text)) {
      fail(ctx, what + " does not parse: " + llvm::toString(std::move(e)));
      return llvm::PreservedAnalyses::all();
    }
    ForcedInlining forced(m, *callees);
    const size_t answered = forced.applied();
    st_->running = true;
    mpm.run(m, mam);
    st_->running = false;
    forced.undo();
    st_->skipRest = true;  // from here on, the default pipeline's optional passes are skipped
    if (llvm::verifyModule(m, &llvm::errs())) {
      fail(ctx, "the module does not verify after " + what + " (an LLVM bug)");
    }
    if (trace) {
      llvm::errs() << "mlbridge-tuning: source " << source << ": applied " << what;
      if (!callees->empty()) llvm::errs() << ", " << answered << " of " << callees->size() << " callee answers";
      llvm::errs() << "\n";
    }
    return llvm::PreservedAnalyses::none();
  }

 private:
  // Runs TEXT (nullptr: clang's -Oz pipeline) on a copy of M and measures
  // the object an exact copy of the result compiles to; the optimized copy is
  // kept in *out (code generation rewrites the module it compiles).
  bool trial(llvm::Module& m, llvm::ModuleAnalysisManager& mam, llvm::TargetMachine& tm, const std::string* text,
             ObjectSize* size, std::unique_ptr<llvm::Module>* out, std::string* error) {
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(m);
    llvm::ModulePassManager mpm;
    if (!text) {
      mpm = st_->clangOz();
    } else if (llvm::Error e = st_->parse(mpm, *text)) {
      *error = "does not parse: " + llvm::toString(std::move(e));
      return false;
    }
    st_->running = true;
    mpm.run(*copy, mam);
    // Then what clang's pipeline does to the module clang compiles after this
    // pass: its required passes (the always-inliner, ...), the optional ones
    // skipped. The copy measured is then the module clang will compile.
    llvm::ModulePassManager rest = st_->clangOz();
    st_->skipRest = true;
    rest.run(*copy, mam);
    st_->skipRest = false;
    st_->running = false;
    // The copy's analyses go with it (clearing its module-level proxies
    // clears the function and SCC analysis managers too, so no result keyed
    // by a function of the copy survives).
    mam.clear(*copy, copy->getName());
    if (llvm::verifyModule(*copy, nullptr)) {
      *error = "the module does not verify after it";
      return false;
    }
    // Code generation depends on the order of each value's uses, which
    // CloneModule does not keep: the module measured is the copy written to
    // bitcode with its use-list orders and read back.
    llvm::SmallVector<char, 0> bitcode;
    {
      llvm::raw_svector_ostream os(bitcode);
      llvm::WriteBitcodeToFile(*copy, os, /*ShouldPreserveUseListOrder=*/true);
    }
    // The same bitcode as an earlier candidate of this module (an order that
    // changed nothing -Oz's pipeline did not): the same object, not compiled again.
    for (const auto& [earlier, earlierSize] : seen_) {
      if (earlier.size() == bitcode.size() && std::equal(earlier.begin(), earlier.end(), bitcode.begin())) {
        *size = earlierSize;
        *out = std::move(copy);
        return true;
      }
    }
    llvm::Expected<std::unique_ptr<llvm::Module>> compiled = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(llvm::StringRef(bitcode.data(), bitcode.size()), "mlbridge-trial"), m.getContext());
    if (!compiled) {
      *error = "its bitcode does not read back: " + llvm::toString(compiled.takeError());
      return false;
    }
    if (!measureObject(**compiled, tm, size, error)) return false;
    seen_.emplace_back(std::move(bitcode), *size);
    *out = std::move(copy);
    return true;
  }

  // The policy on M: -Oz and the chosen orders optimized on copies and
  // measured, the smallest object's module moved into M (-Oz on a tie). False
  // (M untouched, compiled by the default pipeline) when the policy cannot be
  // used: one warning line, the module compiles as -Oz.
  bool applyPolicy(llvm::Module& m, llvm::ModuleAnalysisManager& mam, const std::string& path,
                   const std::string& source, bool trace) {
    llvm::LLVMContext& ctx = m.getContext();
    OrderPolicy& policy = orderPolicy(*st_, path);
    if (!policy.error().empty()) {
      warnPolicy(ctx, path + ": " + policy.error() + "; compiled as -Oz");
      return false;
    }
    llvm::TargetMachine* tm = targetMachineOf(*st_->pb);
    if (!tm) {
      warnPolicy(ctx, "no target machine to measure objects with (give opt -mtriple); compiled as -Oz");
      return false;
    }
    bool measure = pickBool(MeasureOpt, "MLBRIDGE_PO_MEASURE", false);
    std::vector<size_t> chosen;
    if (measure) {
      for (size_t i = 0; i < policy.orders().size(); ++i) chosen.push_back(i);
      int64_t f[kNumPhaseOrderFeatures];
      computePhaseOrderFeatures(m, f);
      llvm::errs() << "mlbridge-po-policy: features " << source << ":";
      for (int64_t v : f) llvm::errs() << " " << v;
      llvm::errs() << "\n";
    } else {
      std::string err;
      unsigned tries = pickUnsigned(TriesOpt, "MLBRIDGE_PO_TRIES", policy.tries());
      if (!policy.choose(m, tries, &chosen, &err)) {
        warnPolicy(ctx, path + ": " + err + "; compiled as -Oz");
        return false;
      }
    }
    std::string err;
    ObjectSize oz, best;
    std::unique_ptr<llvm::Module> kept;
    seen_.clear();
    if (!trial(m, mam, *tm, nullptr, &oz, &kept, &err)) {
      warnPolicy(ctx, "-Oz cannot be measured (" + err + "); compiled as -Oz");
      return false;
    }
    if (measure)
      llvm::errs() << "mlbridge-po-policy: measure " << source << ": oz " << oz.stored << " " << oz.text << " "
                   << oz.dynamicRelocations << "\n";
    best = oz;
    std::optional<size_t> winner;
    for (size_t i : chosen) {
      ObjectSize s;
      std::unique_ptr<llvm::Module> optimized;
      if (!trial(m, mam, *tm, &policy.orders()[i], &s, &optimized, &err)) {
        // an order this LLVM cannot run on this module is not a candidate
        warnPolicy(ctx, "order " + std::to_string(i) + " on " + source + ": " + err + "; not a candidate");
        if (measure) llvm::errs() << "mlbridge-po-policy: measure " << source << ": order " << i << " failed\n";
        continue;
      }
      if (measure)
        llvm::errs() << "mlbridge-po-policy: measure " << source << ": order " << i << " " << s.stored << " " << s.text
                     << " " << s.dynamicRelocations << "\n";
      // never an object larger than -Oz's, whatever it saves in relocations
      if (s.stored <= oz.stored && (s.cost() < best.cost() || (s.cost() == best.cost() && s.text < best.text))) {
        best = s;
        winner = i;
        kept = std::move(optimized);
      }
    }
    if (trace) {
      llvm::errs() << "mlbridge-tuning: source " << source << ": policy tried " << chosen.size() << " orders [";
      for (size_t k = 0; k < chosen.size(); ++k) llvm::errs() << (k ? " " : "") << chosen[k];
      llvm::errs() << "], kept " << (winner ? "order " + std::to_string(*winner) : std::string("-Oz")) << " ("
                   << best.stored << " stored bytes, -Oz " << oz.stored << "; dynamic relocations "
                   << best.dynamicRelocations << ", -Oz " << oz.dynamicRelocations << ")\n";
    }
    seen_.clear();
    // M's analyses are stale from here on (the pass returns none()).
    replaceModuleContents(m, std::move(kept));
    if (llvm::verifyModule(m, &llvm::errs())) {
      fail(ctx, "the module does not verify after the policy's order (an LLVM bug)");
    }
    return true;
  }

  std::shared_ptr<OverrideState> st_;
  // this module's candidates so far: their optimized bitcode and object size
  std::vector<std::pair<llvm::SmallVector<char, 0>, ObjectSize>> seen_;
};

}  // namespace

void registerPipelineOverride(llvm::PassBuilder& pb) {
  auto st = std::make_shared<OverrideState>();
  st->pb = &pb;
  st->clangTuning = tuningOptionsOf(pb);
  if (llvm::PassInstrumentationCallbacks* pic = pb.getPassInstrumentationCallbacks()) {
    st->hooked = true;
    pic->registerShouldRunOptionalPassCallback([st](llvm::StringRef, llvm::Any) { return !st->skipRest; });
  }
  pb.registerPipelineStartEPCallback(
      [st](llvm::ModulePassManager& mpm, llvm::OptimizationLevel) { mpm.addPass(PipelineOverridePass(st)); });
}

}  // namespace mlbridge_llvm
