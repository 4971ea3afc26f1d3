// mlbridge-unroll: every scf.for / affine.for of the module is described by a
// few features, a model answers its unroll factor, and the loop is unrolled
// with MLIR's own utilities. Any failure is a warning on the loop (or the
// module) and leaves the IR as it was: the pass never fails the pipeline.
#include "unroll_pass.h"

#include <mlir/Dialect/Affine/Analysis/LoopAnalysis.h>
#include <mlir/Dialect/Affine/IR/AffineOps.h>
#include <mlir/Dialect/Affine/LoopUtils.h>
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/SCF/Utils/Utils.h>
#include <mlir/Dialect/Utils/StaticValueUtils.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/Interfaces/CallInterfaces.h>
#include <mlir/Interfaces/FunctionInterfaces.h>
#include <mlir/Interfaces/SideEffectInterfaces.h>
#include <mlir/Pass/Pass.h>
#include <mlir/Pass/PassRegistry.h>

#include <memory>
#include <string>
#include <vector>

#include "mlbridge/wire_format.h"
#include "runner_choice.h"
#include "runner_kind.h"

namespace mlbridge_mlir {
namespace {

using namespace mlir;

// The features of one loop, in the runner's input order; each is int64 [1].
enum Feature {
  kTripCount,  // iterations when the bounds and step are constants, else -1
  kLoopDepth,  // 1 for an outermost loop
  kInnermost,  // 1 when the body holds no scf.for / affine.for
  kBodyOps,    // operations in the body, nested ones included, terminators not
  kLoads,      // operations that read memory
  kStores,     // operations that write memory
  kArithOps,   // arith and math operations
  kCalls,      // call operations
  kIterArgs,   // loop-carried values
  kFeatureCount
};
const char* const kFeatureNames[kFeatureCount] = {"trip_count", "loop_depth", "innermost", "body_ops", "loads",
                                                  "stores",     "arith_ops",  "calls",     "iter_args"};
constexpr const char* kAdviceName = "unroll";

bool isLoop(Operation* op) { return isa<scf::ForOp, affine::AffineForOp>(op); }

int64_t tripCount(Operation* op) {
  if (auto f = dyn_cast<scf::ForOp>(op)) {
    std::optional<int64_t> n = constantTripCount(f.getLowerBound(), f.getUpperBound(), f.getStep());
    return n ? *n : -1;
  }
  std::optional<uint64_t> n = affine::getConstantTripCount(cast<affine::AffineForOp>(op));
  return n && *n <= uint64_t(INT64_MAX) ? int64_t(*n) : -1;
}

struct LoopFeatures {
  Operation* loop;
  std::string function;
  int64_t values[kFeatureCount] = {};
};

void describe(Operation* loop, LoopFeatures& out) {
  int64_t* v = out.values;
  v[kTripCount] = tripCount(loop);
  v[kLoopDepth] = 1;
  for (Operation* p = loop->getParentOp(); p != nullptr; p = p->getParentOp())
    if (isLoop(p)) ++v[kLoopDepth];
  v[kInnermost] = 1;
  loop->walk([&](Operation* op) {
    if (op == loop || op->hasTrait<OpTrait::IsTerminator>()) return;
    ++v[kBodyOps];
    if (isLoop(op)) v[kInnermost] = 0;
    if (hasEffect<MemoryEffects::Read>(op)) ++v[kLoads];
    if (hasEffect<MemoryEffects::Write>(op)) ++v[kStores];
    StringRef ns = op->getDialect() != nullptr ? op->getDialect()->getNamespace() : StringRef();
    if (ns == "arith" || ns == "math") ++v[kArithOps];
    if (isa<CallOpInterface>(op)) ++v[kCalls];
  });
  if (auto f = dyn_cast<scf::ForOp>(loop))
    v[kIterArgs] = f.getNumRegionIterArgs();
  else
    v[kIterArgs] = cast<affine::AffineForOp>(loop).getNumIterOperands();
  auto fn = loop->getParentOfType<FunctionOpInterface>();
  out.function = fn ? fn.getName().str() : std::string();
}

std::string describeFeatures(const LoopFeatures& f) {
  std::string s;
  for (int i = 0; i < kFeatureCount; ++i) {
    if (i != 0) s += ' ';
    s += kFeatureNames[i];
    s += '=';
    s += std::to_string(f.values[i]);
  }
  return s;
}

struct UnrollPass : public PassWrapper<UnrollPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(UnrollPass)

  UnrollPass() = default;
  UnrollPass(const UnrollPass& other) : PassWrapper(other) {}

  StringRef getArgument() const final { return "mlbridge-unroll"; }
  StringRef getDescription() const final {
    return "Unroll scf.for / affine.for loops by the factor an mlbridge model answers";
  }
  void getDependentDialects(DialectRegistry& registry) const override {
    registry.insert<arith::ArithDialect, affine::AffineDialect, scf::SCFDialect>();
  }

  Option<std::string> runner{*this, "runner", llvm::cl::desc("onnx or pipe (default: from model= or pipe=)")};
  Option<std::string> model{*this, "model", llvm::cl::desc("ONNX policy file (runner onnx)")};
  Option<std::string> pipe{*this, "pipe", llvm::cl::desc("channel base BASE.in/BASE.out (runner pipe)")};
  Option<std::string> format{*this, "format", llvm::cl::desc("pipe wire format: bitstream, json or protobuf"),
                             llvm::cl::init("bitstream")};
  Option<int> timeoutMs{*this, "timeout-ms", llvm::cl::desc("bound on connecting and on each answer"),
                        llvm::cl::init(5000)};
  Option<int> maxFactor{*this, "max-factor", llvm::cl::desc("largest factor accepted from the model"),
                        llvm::cl::init(64)};
  Option<bool> remarks{*this, "remarks", llvm::cl::desc("emit a remark with the features and decision per loop"),
                       llvm::cl::init(false)};

  void runOnOperation() override;

 private:
  mlbridge::StatusOr<std::unique_ptr<mlbridge::ModelRunner>> makeRunner() const;
};

mlbridge::StatusOr<std::unique_ptr<mlbridge::ModelRunner>> UnrollPass::makeRunner() const {
  using mlbridge::Status;
  using mlbridge::StatusCode;
  std::vector<mlbridge::TensorSpec> features;
  for (const char* name : kFeatureNames) features.push_back(mlbridge::TensorSpec::create<int64_t>(name, {1}));
  std::vector<mlbridge::TensorSpec> advice = {mlbridge::TensorSpec::create<int64_t>(kAdviceName, {1})};
  // The pass's own checks, in its option names; the runner itself comes from
  // the factory every integration shares (integrations/common/runner_choice.h).
  using mlbridge_integrations::RunnerKind;
  RunnerKind kind = RunnerKind::kOnnx;  // unset: what the options point at, the model file first
  if (!runner.empty()) {
    if (!mlbridge_integrations::parseRunnerKind(runner.getValue(), &kind) ||
        (kind != RunnerKind::kOnnx && kind != RunnerKind::kPipe))
      return Status(StatusCode::kInvalidArgument, "runner must be onnx or pipe, not '" + runner.getValue() + "'");
  } else if (model.empty() && !pipe.empty()) {
    kind = RunnerKind::kPipe;
  } else if (model.empty()) {
    return Status(StatusCode::kInvalidArgument, "no model: give model=FILE.onnx or pipe=BASE");
  }
  if (kind == RunnerKind::kOnnx && model.empty())
    return Status(StatusCode::kInvalidArgument, "runner=onnx needs model=FILE.onnx");
  if (kind == RunnerKind::kPipe && pipe.empty())
    return Status(StatusCode::kInvalidArgument, "runner=pipe needs pipe=BASE");
  mlbridge::WireFormat wire;
  if (!mlbridge::parseWireFormat(format.getValue(), &wire))
    return Status(StatusCode::kInvalidArgument, "format must be bitstream, json or protobuf, not '" +
                                                    format.getValue() + "'");
  if (timeoutMs <= 0) return Status(StatusCode::kInvalidArgument, "timeout-ms must be positive");
  mlbridge_integrations::RunnerChoice choice;
  choice.runner = mlbridge_integrations::runnerKindName(kind);
  choice.model = model;
  choice.channel = pipe;
  choice.format = format.getValue();
  choice.timeoutMs = timeoutMs;
  choice.optionPrefix = "mlbridge-unroll ";
  return mlbridge_integrations::createRunner(choice, std::move(features), std::move(advice));
}

void UnrollPass::runOnOperation() {
  // Features of every loop first, on the IR as written (pre-order).
  std::vector<LoopFeatures> loops;
  getOperation()->walk<WalkOrder::PreOrder>([&](Operation* op) {
    if (!isLoop(op)) return;
    loops.push_back(LoopFeatures{op, {}, {}});
    describe(op, loops.back());
  });
  if (loops.empty()) return;

  auto created = makeRunner();
  if (!created.ok()) {
    getOperation()->emitWarning() << "mlbridge-unroll: no decisions, loops left unchanged: "
                                  << created.status().toString();
    return;
  }
  mlbridge::ModelRunner& advisor = **created;
  int64_t* inputs[kFeatureCount];
  for (int i = 0; i < kFeatureCount; ++i) inputs[i] = advisor.getTensor<int64_t>(size_t(i));

  // Ask in pre-order (outer loops first, as written); a failure that breaks
  // the session ends the questions, a refused request only skips its loop.
  std::vector<int64_t> factors(loops.size(), 0);
  const std::string* context = nullptr;
  bool broken = false;
  for (size_t k = 0; k < loops.size() && !broken; ++k) {
    LoopFeatures& l = loops[k];
    if (context == nullptr || *context != l.function) {
      context = &l.function;
      if (mlbridge::Status s = advisor.setContext(l.function); !s.ok()) {
        l.loop->emitWarning() << "mlbridge-unroll: loop left unchanged: " << s.toString();
        broken = true;
        break;
      }
    }
    for (int i = 0; i < kFeatureCount; ++i) *inputs[i] = l.values[i];
    mlbridge::StatusOr<int64_t> answer = advisor.evaluate<int64_t>();
    if (!answer.ok()) {
      l.loop->emitWarning() << "mlbridge-unroll: loop left unchanged: " << answer.status().toString();
      broken = answer.status().code() != mlbridge::StatusCode::kAborted;
      continue;
    }
    if (*answer < 0 || *answer > maxFactor) {
      l.loop->emitWarning() << "mlbridge-unroll: loop left unchanged: the model answered unroll factor "
                            << *answer << ", outside [0, " << int(maxFactor) << "]";
      continue;
    }
    factors[k] = *answer;
    if (remarks) l.loop->emitRemark() << "mlbridge-unroll: " << describeFeatures(l) << " -> unroll " << *answer;
  }
  if (broken) getOperation()->emitWarning() << "mlbridge-unroll: the model session ended; later loops left unchanged";
  if (mlbridge::Status s = advisor.finish(); !s.ok() && !broken)
    getOperation()->emitWarning() << "mlbridge-unroll: " << s.toString();

  // Apply innermost first, so an outer unroll copies already unrolled inner
  // loops and every loop handle is still valid when its turn comes.
  for (size_t k = loops.size(); k-- > 0;) {
    if (factors[k] <= 1) continue;  // 0: no hint, 1: keep as is
    Operation* op = loops[k].loop;
    LogicalResult done = failure();
    if (auto f = dyn_cast<scf::ForOp>(op))
      done = loopUnrollByFactor(f, uint64_t(factors[k]));
    else
      done = affine::loopUnrollByFactor(cast<affine::AffineForOp>(op), uint64_t(factors[k]));
    if (failed(done)) op->emitWarning() << "mlbridge-unroll: MLIR could not unroll this loop by " << factors[k];
  }
}

}  // namespace

std::unique_ptr<Pass> createUnrollPass() { return std::make_unique<UnrollPass>(); }

void registerUnrollPass() { PassRegistration<UnrollPass>(); }

}  // namespace mlbridge_mlir
