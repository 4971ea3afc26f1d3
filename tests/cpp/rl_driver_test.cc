// The multi-agent RL driver with scripted in-process agents: two and four
// agents, a hierarchical (RL4ReAl-like) environment, the step budget, errors
// that name the agent and the step, contexts, and repeated episodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "mlbridge/rl.h"

namespace mlbridge {
namespace {

using rl::Agent;
using rl::ContextMode;
using rl::Driver;
using rl::DriverOptions;
using rl::EpisodeStats;
using rl::Environment;
using rl::LambdaEnvironment;

// A deterministic policy: int64 "action" [1] = policy(input 0 as int64 values).
// Records its calls and the contexts it was given.
class ScriptedRunner : public ModelRunner {
 public:
  using Policy = std::function<StatusOr<int64_t>(Span<const int64_t> state)>;

  static std::unique_ptr<ScriptedRunner> make(Policy policy, int64_t stateSize = 1) {
    std::unique_ptr<ScriptedRunner> r(new ScriptedRunner({TensorSpec::create<int64_t>("state", {stateSize})},
                                                         {TensorSpec::create<int64_t>("action", {1})}));
    r->policy_ = std::move(policy);
    EXPECT_TRUE(r->initBuffers().ok());
    return r;
  }

  int calls = 0;
  std::vector<std::string> contexts;

 private:
  using ModelRunner::ModelRunner;
  Status evaluateImpl() override {
    ++calls;
    const TensorRef& in = inputRefs()[0];
    StatusOr<int64_t> action =
        policy_(Span<const int64_t>(static_cast<const int64_t*>(in.data), in.spec->elementCount()));
    if (!action.ok()) return action.status();
    *static_cast<int64_t*>(outputRefs()[0].data) = *action;
    return Status::OK();
  }
  Status setContextImpl(std::string_view name) override {
    contexts.emplace_back(name);
    return Status::OK();
  }

  Policy policy_;
};

ScriptedRunner::Policy constant(int64_t v) {
  return [v](Span<const int64_t>) -> StatusOr<int64_t> { return v; };
}

// ---- two agents ---------------------------------------------------------------

// A counter: agent 0 adds its decision, agent 1 multiplies by its decision;
// they alternate, and the episode ends after `length` decisions.
class CounterEnv : public Environment {
 public:
  explicit CounterEnv(int length) : length_(length) {}

  Status reset() override {
    ++resets;
    value = 1;
    steps_ = 0;
    trace.clear();
    return Status::OK();
  }
  bool done() override { return steps_ >= length_; }
  StatusOr<int> nextAgent() override { return steps_ % 2; }
  Status observe(int, ModelRunner& runner) override {
    runner.input<int64_t>(0)[0] = value;  // zero-copy
    return Status::OK();
  }
  Status step(int agent, const ModelRunner& runner) override {
    StatusOr<int64_t> d = rl::scalarOutput<int64_t>(runner);
    if (!d.ok()) return d.status();
    value = agent == 0 ? value + *d : value * *d;
    trace.push_back(agent);
    ++steps_;
    return Status::OK();
  }

  int resets = 0;
  int64_t value = 0;
  std::vector<int> trace;

 private:
  int length_;
  int steps_ = 0;
};

TEST(RlDriver, TwoAgentsAlternate) {
  auto add = ScriptedRunner::make([](Span<const int64_t> s) -> StatusOr<int64_t> { return s[0] < 10 ? 3 : 1; });
  auto mul = ScriptedRunner::make(constant(2));
  ScriptedRunner& addRef = *add;
  std::vector<Agent> agents;
  agents.emplace_back("add", std::move(add));  // owned
  agents.emplace_back("mul", *mul);             // borrowed
  EXPECT_TRUE(agents[0].ownsRunner());
  EXPECT_FALSE(agents[1].ownsRunner());

  CounterEnv env(6);
  StatusOr<EpisodeStats> stats = rl::runEpisode(env, agents);
  ASSERT_TRUE(stats.ok()) << stats.status().toString();
  // 1 +3 =4 *2 =8 +3 =11 *2 =22 +1 =23 *2 =46
  EXPECT_EQ(env.value, 46);
  EXPECT_EQ(env.trace, (std::vector<int>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(stats->steps, 6);
  EXPECT_EQ(stats->decisions, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(stats->failedAgent, -1);
  EXPECT_EQ(addRef.calls, 3);
  EXPECT_EQ(mul->calls, 3);
  EXPECT_TRUE(addRef.contexts.empty()) << "no context set, none sent";
}

TEST(RlDriver, EnvironmentDoneAtOnceTakesNoDecision) {
  auto r = ScriptedRunner::make(constant(1));
  std::vector<Agent> agents;
  agents.emplace_back("only", *r);
  CounterEnv env(0);
  StatusOr<EpisodeStats> stats = rl::runEpisode(env, agents);
  ASSERT_TRUE(stats.ok()) << stats.status().toString();
  EXPECT_EQ(stats->steps, 0);
  EXPECT_EQ(stats->decisions, (std::vector<int64_t>{0}));
  EXPECT_EQ(env.resets, 1);
  EXPECT_EQ(r->calls, 0);
}

// ---- four agents, hierarchical (RL4ReAl-like) ---------------------------------

// Register allocation in miniature. Nodes have a degree; until every node is
// coloured: "node" picks a node, "task" decides colour (0) or split (1) for it,
// and the environment then hands the node to "colour" or "split" depending on
// that decision. Splitting halves the node's degree; colouring removes it.
class AllocationEnv : public Environment {
 public:
  enum { kNode = 0, kTask = 1, kColour = 2, kSplit = 3 };
  static constexpr int kMaxNodes = 8;

  Status reset() override {
    ++resets;
    degrees = {1, 4, 2, 6};
    coloured.assign(degrees.size(), -1);
    next_ = kNode;
    current_ = -1;
    trace.clear();
    return Status::OK();
  }
  bool done() override {
    return std::all_of(coloured.begin(), coloured.end(), [](int64_t c) { return c >= 0; });
  }
  StatusOr<int> nextAgent() override { return next_; }
  Status observe(int agent, ModelRunner& runner) override {
    if (agent == kNode) {
      Span<int64_t> in = runner.input<int64_t>(0);
      for (size_t i = 0; i < in.size(); ++i)
        in[i] = i < degrees.size() && coloured[i] < 0 ? degrees[i] : -1;  // -1: nothing to allocate
    } else {
      runner.input<int64_t>(0)[0] = degrees[static_cast<size_t>(current_)];
    }
    return Status::OK();
  }
  Status step(int agent, const ModelRunner& runner) override {
    StatusOr<int64_t> d = rl::scalarOutput<int64_t>(runner);
    if (!d.ok()) return d.status();
    trace.push_back(agent);
    switch (agent) {
      case kNode:
        if (*d < 0 || *d >= static_cast<int64_t>(degrees.size()) || coloured[static_cast<size_t>(*d)] >= 0)
          return invalidArgument("node agent chose node " + std::to_string(*d));
        current_ = *d;
        next_ = kTask;
        break;
      case kTask:
        next_ = *d == 0 ? kColour : kSplit;  // the decision chooses the next agent
        break;
      case kColour:
        coloured[static_cast<size_t>(current_)] = *d;
        next_ = kNode;
        break;
      case kSplit:
        degrees[static_cast<size_t>(current_)] = *d;
        next_ = kNode;
        break;
      default:
        return internalError("no such agent");
    }
    return Status::OK();
  }

  int resets = 0;
  std::vector<int64_t> degrees, coloured;
  std::vector<int> trace;

 private:
  int next_ = kNode;
  int64_t current_ = -1;
};

std::vector<Agent> allocationAgents() {
  std::vector<Agent> agents;
  // Highest degree first (the first one on ties).
  agents.emplace_back("node",
                      ScriptedRunner::make(
                          [](Span<const int64_t> s) -> StatusOr<int64_t> {
                            int64_t best = -1;
                            for (size_t i = 0; i < s.size(); ++i)
                              if (s[i] >= 0 && (best < 0 || s[i] > s[static_cast<size_t>(best)]))
                                best = static_cast<int64_t>(i);
                            return best;
                          },
                          AllocationEnv::kMaxNodes),
                      "node");
  agents.emplace_back("task", ScriptedRunner::make([](Span<const int64_t> s) -> StatusOr<int64_t> {
                        return s[0] >= 3 ? 1 : 0;
                      }),
                      "task");
  agents.emplace_back("colour", ScriptedRunner::make([](Span<const int64_t> s) -> StatusOr<int64_t> {
                        return s[0] % 3;
                      }),
                      "colour");
  agents.emplace_back("split", ScriptedRunner::make([](Span<const int64_t> s) -> StatusOr<int64_t> {
                        return s[0] / 2;
                      }),
                      "split");
  return agents;
}

ScriptedRunner& scripted(const Agent& a) { return static_cast<ScriptedRunner&>(*a.runner()); }

TEST(RlDriver, FourAgentsHierarchicalEnvironmentChoosesTheNext) {
  std::vector<Agent> agents = allocationAgents();
  AllocationEnv env;
  DriverOptions opts;
  opts.context = "foo";
  StatusOr<EpisodeStats> stats = rl::runEpisode(env, agents, opts);
  ASSERT_TRUE(stats.ok()) << stats.status().toString();
  // {1,4,2,6}: 6 split to 3, 4 split to 2, 3 split to 1, then 2, 2, 1, 1 coloured.
  const std::vector<int> expected = {0, 1, 3, 0, 1, 3, 0, 1, 3, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2};
  EXPECT_EQ(env.trace, expected);
  EXPECT_EQ(stats->steps, 21);
  EXPECT_EQ(stats->decisions, (std::vector<int64_t>{7, 7, 4, 3}));
  EXPECT_EQ(env.degrees, (std::vector<int64_t>{1, 2, 2, 1}));
  EXPECT_EQ(env.coloured, (std::vector<int64_t>{1, 2, 2, 1}));
  for (const Agent& a : agents) {
    EXPECT_EQ(scripted(a).contexts, std::vector<std::string>{"foo/" + a.name()}) << "once per episode, EPISODE/ROLE";
    EXPECT_EQ(scripted(a).calls, stats->decisions[static_cast<size_t>(rl::findAgent(agents, a.name()))]);
  }
  EXPECT_EQ(rl::findAgent(agents, "split"), 3);
  EXPECT_EQ(rl::findAgent(agents, "spill"), -1);
}

TEST(RlDriver, EpisodesRepeatFromReset) {
  std::vector<Agent> agents = allocationAgents();
  AllocationEnv env;
  Driver driver;
  const char* functions[] = {"f", "g", "h"};
  for (const char* f : functions) {
    DriverOptions opts;
    opts.context = f;
    StatusOr<EpisodeStats> stats = driver.runEpisode(env, agents, opts);
    ASSERT_TRUE(stats.ok()) << stats.status().toString();
    EXPECT_EQ(stats->steps, 21) << "every episode starts from reset()";
    EXPECT_EQ(stats->decisions, (std::vector<int64_t>{7, 7, 4, 3}));
    EXPECT_EQ(driver.lastEpisode().decisions, stats->decisions);
  }
  EXPECT_EQ(env.resets, 3);
  EXPECT_EQ(driver.episodes(), 3);
  EXPECT_EQ(scripted(agents[1]).calls, 21);
  EXPECT_EQ(scripted(agents[1]).contexts, (std::vector<std::string>{"f/task", "g/task", "h/task"}));
}

// ---- the step budget ------------------------------------------------------------

TEST(RlDriver, StepBudgetEndsAnEpisodeThatNeverFinishes) {
  auto r = ScriptedRunner::make(constant(0));
  std::vector<Agent> agents;
  agents.emplace_back("stuck", *r);
  int steps = 0;
  LambdaEnvironment env;
  env.onDone = [] { return false; };  // never done
  env.onObserve = [](int, ModelRunner&) { return Status::OK(); };
  env.onStep = [&](int, const ModelRunner&) {
    ++steps;
    return Status::OK();
  };
  DriverOptions opts;
  opts.maxSteps = 5;
  Driver driver;
  StatusOr<EpisodeStats> stats = driver.runEpisode(env, agents, opts);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(stats.status().message().find("not done after 5 steps"), std::string::npos) << stats.status().message();
  EXPECT_EQ(steps, 5);
  EXPECT_EQ(r->calls, 5);
  EXPECT_EQ(driver.lastEpisode().steps, 5);
  EXPECT_EQ(driver.lastEpisode().failedAgent, -1) << "the budget, not an agent, failed";
}

TEST(RlDriver, StepBudgetMayBeUsedExactly) {
  auto a = ScriptedRunner::make(constant(1));
  auto b = ScriptedRunner::make(constant(1));
  std::vector<Agent> agents;
  agents.emplace_back("a", *a);
  agents.emplace_back("b", *b);
  CounterEnv env(6);
  DriverOptions opts;
  opts.maxSteps = 6;
  StatusOr<EpisodeStats> stats = rl::runEpisode(env, agents, opts);
  ASSERT_TRUE(stats.ok()) << stats.status().toString();
  EXPECT_EQ(stats->steps, 6);
  opts.maxSteps = 5;
  EXPECT_EQ(rl::runEpisode(env, agents, opts).status().code(), StatusCode::kResourceExhausted);
}

// ---- errors name the agent and the step ------------------------------------------

TEST(RlDriver, FailingEvaluateNamesTheAgentAndTheStep) {
  std::vector<Agent> agents = allocationAgents();
  int taskCalls = 0;
  auto failing = ScriptedRunner::make([&](Span<const int64_t>) -> StatusOr<int64_t> {
    if (++taskCalls == 3) return Status(StatusCode::kAborted, "model refused the observation");
    return 1;  // split
  });
  agents[1] = Agent("task", *failing);
  AllocationEnv env;
  Driver driver;
  StatusOr<EpisodeStats> stats = driver.runEpisode(env, agents);
  ASSERT_FALSE(stats.ok());
  // node, task, split, node, task, split, node, task(fails): step 7.
  EXPECT_EQ(stats.status().code(), StatusCode::kAborted) << "the code of the source is kept";
  EXPECT_EQ(stats.status().message(), "agent 'task' (#1) at step 7: evaluate: model refused the observation");
  EXPECT_EQ(env.trace, (std::vector<int>{0, 1, 3, 0, 1, 3, 0})) << "the episode stops at the first error";
  const EpisodeStats& last = driver.lastEpisode();
  EXPECT_EQ(last.steps, 7);
  EXPECT_EQ(last.decisions, (std::vector<int64_t>{3, 2, 0, 2}));
  EXPECT_EQ(last.failedAgent, 1);
  EXPECT_EQ(scripted(agents[3]).calls, 2);
}

TEST(RlDriver, ObserveAndStepErrorsNameTheirPhase) {
  auto r = ScriptedRunner::make(constant(7));
  std::vector<Agent> agents;
  agents.emplace_back("", *r);  // unnamed: identified by its index
  agents.emplace_back("second", *r);
  int calls = 0;
  LambdaEnvironment env;
  env.onDone = [] { return false; };
  env.onNextAgent = [&]() -> StatusOr<int> { return calls; };
  env.onObserve = [&](int agent, ModelRunner&) {
    return agent == 1 ? Status(StatusCode::kNotFound, "no such register class") : Status::OK();
  };
  env.onStep = [&](int, const ModelRunner&) {
    ++calls;
    return Status::OK();
  };
  StatusOr<EpisodeStats> s = rl::runEpisode(env, agents);
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.status().message(), "agent 'second' (#1) at step 1: observe: no such register class");
  EXPECT_EQ(r->calls, 1) << "a failed observation is not evaluated";

  calls = 0;
  env.onObserve = [](int, ModelRunner&) { return Status::OK(); };
  env.onStep = [](int, const ModelRunner& runner) -> Status {
    StatusOr<float> d = rl::scalarOutput<float>(runner);  // the advice is int64
    return d.ok() ? Status::OK() : d.status();
  };
  s = rl::runEpisode(env, agents);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message().rfind("agent (#0) at step 0: step: output 'action' is int64_t", 0), 0u)
      << s.status().message();
}

TEST(RlDriver, NextAgentOutOfRangeOrFailing) {
  std::vector<Agent> agents = allocationAgents();
  for (int bad : {4, -1, 1000}) {
    LambdaEnvironment env;
    int steps = 0;
    env.onDone = [] { return false; };
    env.onNextAgent = [&]() -> StatusOr<int> { return steps < 2 ? steps : bad; };
    env.onObserve = [](int, ModelRunner& r) {
      r.input<int64_t>(0)[0] = 3;
      return Status::OK();
    };
    env.onStep = [&](int, const ModelRunner&) {
      ++steps;
      return Status::OK();
    };
    StatusOr<EpisodeStats> s = rl::runEpisode(env, agents);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kOutOfRange);
    EXPECT_EQ(s.status().message(), "environment at step 2: nextAgent returned " + std::to_string(bad) +
                                        ", but there are 4 agents (0..3)");
  }
  LambdaEnvironment env;
  env.onDone = [] { return false; };
  env.onNextAgent = []() -> StatusOr<int> { return Status(StatusCode::kInternal, "worklist corrupted"); };
  env.onObserve = [](int, ModelRunner&) { return Status::OK(); };
  env.onStep = [](int, const ModelRunner&) { return Status::OK(); };
  StatusOr<EpisodeStats> s = rl::runEpisode(env, agents);
  EXPECT_EQ(s.status().code(), StatusCode::kInternal);
  EXPECT_EQ(s.status().message(), "environment at step 0: nextAgent: worklist corrupted");
}

TEST(RlDriver, ResetErrorEndsTheEpisodeBeforeAnyDecision) {
  std::vector<Agent> agents = allocationAgents();
  LambdaEnvironment env;
  env.onReset = [] { return failedPrecondition("function has no blocks"); };
  env.onDone = [] { return false; };
  env.onObserve = [](int, ModelRunner&) { return Status::OK(); };
  env.onStep = [](int, const ModelRunner&) { return Status::OK(); };
  StatusOr<EpisodeStats> s = rl::runEpisode(env, agents);
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.status().message(), "environment: reset: function has no blocks");
  EXPECT_EQ(scripted(agents[0]).calls, 0);
}

TEST(RlDriver, RefusesAnInvalidSetup) {
  CounterEnv env(2);
  StatusOr<EpisodeStats> s = rl::runEpisode(env, Span<const Agent>());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);

  auto r = ScriptedRunner::make(constant(1));
  std::vector<Agent> agents;
  agents.emplace_back("ok", *r);
  agents.emplace_back("empty", std::unique_ptr<ModelRunner>());
  s = rl::runEpisode(env, agents);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("agent 'empty' (#1) has no runner"), std::string::npos) << s.status().message();

  Agent moved("m", *r);
  Agent target = std::move(moved);
  EXPECT_EQ(moved.runner(), nullptr) << "a moved-from agent has no runner";  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(target.runner(), r.get());

  agents.pop_back();
  DriverOptions opts;
  opts.maxSteps = 0;
  s = rl::runEpisode(env, agents, opts);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(env.resets, 0) << "setup errors come before reset()";
}

// ---- contexts -----------------------------------------------------------------

TEST(RlDriver, ContextModes) {
  auto shared = ScriptedRunner::make(constant(1));
  auto own = ScriptedRunner::make(constant(1));
  std::vector<Agent> agents;
  agents.emplace_back("a", *shared, "a");
  agents.emplace_back("b", *shared, "b");
  agents.emplace_back("c", *own);
  // a a b c b a
  const int order[] = {0, 0, 1, 2, 1, 0};
  size_t pos = 0;
  LambdaEnvironment env;
  env.onReset = [&] {
    pos = 0;
    return Status::OK();
  };
  env.onDone = [&] { return pos == 6; };
  env.onNextAgent = [&]() -> StatusOr<int> { return order[pos]; };
  env.onObserve = [](int, ModelRunner&) { return Status::OK(); };
  env.onStep = [&](int, const ModelRunner&) {
    ++pos;
    return Status::OK();
  };

  // Per decision: a shared runner gets a context when the agent it serves
  // changes; a runner whose context did not change gets none.
  DriverOptions opts;
  opts.context = "fn";
  opts.contextMode = ContextMode::kPerDecision;
  ASSERT_TRUE(rl::runEpisode(env, agents, opts).ok());
  EXPECT_EQ(shared->contexts, (std::vector<std::string>{"fn/a", "fn/b", "fn/a"}));
  EXPECT_EQ(own->contexts, (std::vector<std::string>{"fn"}));

  // Per episode, only the episode's name: a shared runner gets it once.
  shared->contexts.clear();
  own->contexts.clear();
  std::vector<Agent> roleless;
  roleless.emplace_back("a", *shared);
  roleless.emplace_back("b", *shared);
  roleless.emplace_back("c", *own);
  opts.contextMode = ContextMode::kPerEpisode;
  ASSERT_TRUE(rl::runEpisode(env, roleless, opts).ok());
  EXPECT_EQ(shared->contexts, (std::vector<std::string>{"fn"}));
  EXPECT_EQ(own->contexts, (std::vector<std::string>{"fn"}));

  // No episode name: the roles alone; none at all: no call.
  shared->contexts.clear();
  own->contexts.clear();
  opts.context = std::string_view();
  ASSERT_TRUE(rl::runEpisode(env, agents, opts).ok());
  EXPECT_EQ(shared->contexts, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(own->contexts.empty());

  shared->contexts.clear();
  opts.context = "fn";
  opts.contextMode = ContextMode::kNone;
  ASSERT_TRUE(rl::runEpisode(env, agents, opts).ok());
  EXPECT_TRUE(shared->contexts.empty());
  EXPECT_TRUE(own->contexts.empty());
}

TEST(RlDriver, SetContextFailureNamesTheAgent) {
  auto r = ScriptedRunner::make(constant(1));
  ASSERT_TRUE(r->finish().ok());  // a finished runner refuses contexts
  std::vector<Agent> agents;
  agents.emplace_back("late", *r);
  CounterEnv env(1);
  DriverOptions opts;
  opts.context = "fn";
  Driver driver;
  StatusOr<EpisodeStats> s = driver.runEpisode(env, agents, opts);
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.status().message().rfind("agent 'late' (#0): setContext(\"fn\"): ", 0), 0u) << s.status().message();
  EXPECT_EQ(driver.lastEpisode().failedAgent, 0);
}

// ---- the callback environment ---------------------------------------------------

TEST(RlLambdaEnvironment, SingleAgentInAFewLines) {
  auto r = ScriptedRunner::make([](Span<const int64_t> s) -> StatusOr<int64_t> { return s[0] * 2; });
  std::vector<Agent> agents;
  agents.emplace_back("doubler", *r);
  std::vector<int64_t> seen;
  LambdaEnvironment env;  // no onNextAgent: agent 0 acts
  env.onDone = [&] { return seen.size() == 3; };
  env.onObserve = [&](int, ModelRunner& runner) { return runner.setFeature("state", int64_t(seen.size()) + 1); };
  env.onStep = [&](int, const ModelRunner& runner) {
    StatusOr<int64_t> d = rl::scalarOutput<int64_t>(runner);
    if (d.ok()) seen.push_back(*d);
    return d.status();
  };
  StatusOr<EpisodeStats> stats = rl::runEpisode(env, agents);
  ASSERT_TRUE(stats.ok()) << stats.status().toString();
  EXPECT_EQ(seen, (std::vector<int64_t>{2, 4, 6}));
}

TEST(RlLambdaEnvironment, MissingCallbackIsAnErrorNotACrash) {
  auto r = ScriptedRunner::make(constant(1));
  std::vector<Agent> agents;
  agents.emplace_back("x", *r);
  LambdaEnvironment env;
  env.onDone = [] { return false; };
  env.onObserve = [](int, ModelRunner&) { return Status::OK(); };
  StatusOr<EpisodeStats> s = rl::runEpisode(env, agents);
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("onStep is not set"), std::string::npos) << s.status().message();
  EXPECT_EQ(r->calls, 0);
}

}  // namespace
}  // namespace mlbridge
