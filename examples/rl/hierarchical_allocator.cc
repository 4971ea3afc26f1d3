// A hierarchical multi-agent episode in the style of RL4ReAl (register
// allocation by RL): a node-selection agent picks the next live range, a
// task-selection agent decides to colour or split it, and the environment hands
// the range to the colouring or the splitting agent according to that choice.
//
// The four "models" here are in-process heuristics so the example runs alone;
// any ModelRunner can take their place, e.g. a Python policy over pipes:
//   auto r = mlbridge::PipeModelRunner::create(features, {advice}, opts);
//   agents.emplace_back("colour", std::move(*r), "colour");
//
// Usage: mlbridge-rl-example
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "mlbridge/rl.h"

using namespace mlbridge;

namespace {

constexpr int64_t kMaxRanges = 8;
constexpr int64_t kRegisters = 3;

// An in-process policy: int64 "action" = policy(int64 input 0).
class HeuristicRunner final : public ModelRunner {
 public:
  using Policy = std::function<int64_t(Span<const int64_t>)>;
  static std::unique_ptr<ModelRunner> make(int64_t inputSize, Policy policy) {
    std::unique_ptr<HeuristicRunner> r(new HeuristicRunner({TensorSpec::create<int64_t>("obs", {inputSize})},
                                                           {TensorSpec::create<int64_t>("action", {1})}));
    r->policy_ = std::move(policy);
    if (!r->initBuffers().ok()) return nullptr;  // the driver refuses an agent without a runner
    return r;
  }

 private:
  using ModelRunner::ModelRunner;
  Status evaluateImpl() override {
    const TensorRef& in = inputRefs()[0];
    *static_cast<int64_t*>(outputRefs()[0].data) =
        policy_(Span<const int64_t>(static_cast<const int64_t*>(in.data), in.spec->elementCount()));
    return Status::OK();
  }
  Policy policy_;
};

// The pass's side: live ranges with a degree (interference count); a range is
// done once it has a register. Splitting lowers its degree.
class AllocationEnvironment final : public rl::Environment {
 public:
  enum Role { kNode, kTask, kColour, kSplit };

  explicit AllocationEnvironment(std::vector<int64_t> degrees) : initial_(std::move(degrees)) {}

  Status reset() override {
    degree_ = initial_;
    reg_.assign(degree_.size(), -1);
    next_ = kNode;
    return Status::OK();
  }
  bool done() override {
    for (int64_t r : reg_)
      if (r < 0) return false;
    return true;
  }
  StatusOr<int> nextAgent() override { return next_; }
  Status observe(int agent, ModelRunner& runner) override {
    Span<int64_t> obs = runner.input<int64_t>(0);  // zero-copy into the runner
    if (agent == kNode) {
      for (size_t i = 0; i < obs.size(); ++i) obs[i] = i < degree_.size() && reg_[i] < 0 ? degree_[i] : -1;
    } else {
      obs[0] = degree_[current_];
    }
    return Status::OK();
  }
  Status step(int agent, const ModelRunner& runner) override {
    StatusOr<int64_t> d = rl::scalarOutput<int64_t>(runner);
    if (!d.ok()) return d.status();
    switch (agent) {
      case kNode:
        if (*d < 0 || static_cast<size_t>(*d) >= degree_.size() || reg_[static_cast<size_t>(*d)] >= 0)
          return invalidArgument("no live range " + std::to_string(*d) + " to allocate");
        current_ = static_cast<size_t>(*d);
        next_ = kTask;
        break;
      case kTask: next_ = *d == 0 ? kColour : kSplit; break;  // the decision picks the next agent
      case kColour: reg_[current_] = *d; next_ = kNode; break;
      case kSplit: degree_[current_] = *d; next_ = kNode; break;
      default: return internalError("unknown agent");
    }
    return Status::OK();
  }
  const std::vector<int64_t>& registers() const { return reg_; }

 private:
  std::vector<int64_t> initial_, degree_, reg_;
  size_t current_ = 0;
  int next_ = kNode;
};

}  // namespace

int main() {
  std::vector<rl::Agent> agents;  // indices match AllocationEnvironment::Role
  agents.emplace_back("node", HeuristicRunner::make(kMaxRanges, [](Span<const int64_t> obs) {
                        int64_t best = -1;  // the highest degree first
                        for (size_t i = 0; i < obs.size(); ++i)
                          if (obs[i] >= 0 && (best < 0 || obs[i] > obs[static_cast<size_t>(best)]))
                            best = static_cast<int64_t>(i);
                        return best;
                      }), "node");
  agents.emplace_back("task", HeuristicRunner::make(1, [](Span<const int64_t> obs) -> int64_t {
                        return obs[0] >= kRegisters ? 1 : 0;  // split what cannot be coloured
                      }), "task");
  agents.emplace_back("colour", HeuristicRunner::make(1, [](Span<const int64_t> obs) {
                        return obs[0] % kRegisters;
                      }), "colour");
  agents.emplace_back("split", HeuristicRunner::make(1, [](Span<const int64_t> obs) {
                        return obs[0] / 2;
                      }), "split");

  rl::Driver driver;
  const char* functions[] = {"main", "sort"};
  const std::vector<int64_t> degrees[] = {{1, 4, 2, 6}, {5, 5, 1}};
  for (size_t f = 0; f < 2; ++f) {
    AllocationEnvironment env(degrees[f]);
    rl::DriverOptions opts;
    opts.context = functions[f];  // each runner gets "main/node", "main/task", ...
    opts.maxSteps = 1000;
    StatusOr<rl::EpisodeStats> stats = driver.runEpisode(env, agents, opts);
    if (!stats.ok()) {
      std::fprintf(stderr, "%s: %s\n", functions[f], stats.status().toString().c_str());
      return 1;
    }
    std::printf("%s: %lld decisions (", functions[f], static_cast<long long>(stats->steps));
    for (size_t a = 0; a < agents.size(); ++a)
      std::printf("%s%s %lld", a ? ", " : "", agents[a].name().c_str(),
                  static_cast<long long>(stats->decisions[a]));
    std::printf("); registers:");
    for (int64_t r : env.registers()) std::printf(" %lld", static_cast<long long>(r));
    std::printf("\n");
  }
  return 0;
}
