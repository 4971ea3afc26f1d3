// rl::Environment: the compiler side of a (multi-agent) reinforcement-learning
// episode, implemented by the pass. The driver (rl_driver.h) asks it which
// agent acts, lets it fill that agent's inputs, evaluates the agent's model and
// hands the decision back:
//
//   reset()
//   while (!done()) {
//     a = nextAgent();          // the environment chooses: hierarchical policies
//     observe(a, runner_a);     // write runner_a.input<T>(i) in place
//     runner_a.evaluate();      // any ModelRunner: pipes, gRPC, in-process
//     step(a, runner_a);        // read runner_a's outputs, apply the decision
//   }
//
// Every hook returns a Status: an error ends the episode, and the driver
// reports it with the agent and the step. Errors are values; nothing throws.
#ifndef MLBRIDGE_RL_ENVIRONMENT_H
#define MLBRIDGE_RL_ENVIRONMENT_H

#include <cstddef>
#include <functional>

#include "mlbridge/model_runner.h"
#include "mlbridge/span.h"
#include "mlbridge/status.h"

namespace mlbridge {
namespace rl {

class Environment {
 public:
  Environment() = default;
  virtual ~Environment();

  // Starts an episode (the driver calls it first, once per episode).
  virtual Status reset() = 0;
  // True when the episode is over; checked before every step.
  virtual bool done() = 0;
  // Index (into the driver's agent list) of the agent that acts now. It may
  // depend on earlier decisions: that is how a hierarchical policy (one agent
  // choosing which other agent acts) is written.
  virtual StatusOr<int> nextAgent() = 0;
  // Fills `runner`'s inputs for `agent`'s decision: zero-copy through
  // runner.input<T>(i), or runner.setFeature(...).
  virtual Status observe(int agent, ModelRunner& runner) = 0;
  // Applies the decision `agent` made, read from runner's outputs
  // (scalarOutput<T>(runner), runner.output<T>(i), runner.outputInto(...)).
  virtual Status step(int agent, const ModelRunner& runner) = 0;

 protected:
  Environment(const Environment&) = default;
  Environment& operator=(const Environment&) = default;
};

// Output `output` of an evaluated runner as one T; an error (never a
// reinterpretation) when its dtype is not T or it has more than one element.
// Allocation-free.
template <class T>
StatusOr<T> scalarOutput(const ModelRunner& runner, size_t output = 0) {
  T value{};
  Status s = runner.outputInto<T>(output, Span<T>(&value, 1));
  if (!s.ok()) return s;
  return value;
}

// An Environment made of callbacks, so a pass can write one in a few lines:
//
//   rl::LambdaEnvironment env;
//   env.onReset = [&] { graph.reset(); return Status::OK(); };
//   env.onDone = [&] { return graph.empty(); };
//   env.onNextAgent = [&]() -> StatusOr<int> { return next; };
//   env.onObserve = [&](int agent, ModelRunner& r) { ...; return Status::OK(); };
//   env.onStep = [&](int agent, const ModelRunner& r) { ...; return Status::OK(); };
//
// onDone, onObserve and onStep are required (reset() reports a missing one);
// an unset onReset does nothing and an unset onNextAgent always picks agent 0
// (a single-agent environment). Calling a callback allocates nothing.
class LambdaEnvironment final : public Environment {
 public:
  std::function<Status()> onReset;
  std::function<bool()> onDone;
  std::function<StatusOr<int>()> onNextAgent;
  std::function<Status(int agent, ModelRunner& runner)> onObserve;
  std::function<Status(int agent, const ModelRunner& runner)> onStep;

  Status reset() override;
  bool done() override;
  StatusOr<int> nextAgent() override;
  Status observe(int agent, ModelRunner& runner) override;
  Status step(int agent, const ModelRunner& runner) override;
};

}  // namespace rl
}  // namespace mlbridge

#endif  // MLBRIDGE_RL_ENVIRONMENT_H
