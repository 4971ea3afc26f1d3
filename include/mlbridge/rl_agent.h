// rl::Agent: one decision maker of an RL episode, a name and any ModelRunner
// (a Python model over pipes, gRPC, the in-process engine, a hand-written
// policy), owned or borrowed.
//
//   std::vector<rl::Agent> agents;
//   agents.emplace_back("select", std::move(selectRunner));  // owned
//   agents.emplace_back("colour", colourRunner);             // borrowed
//
// Several agents may share one runner (one model serving several roles); use
// the per-decision context (rl_driver.h) so the model can tell them apart.
#ifndef MLBRIDGE_RL_AGENT_H
#define MLBRIDGE_RL_AGENT_H

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "mlbridge/model_runner.h"
#include "mlbridge/span.h"

namespace mlbridge {
namespace rl {

class Agent {
 public:
  Agent() = default;  // no runner: the driver refuses it
  // Borrowed: `runner` must outlive the agent.
  Agent(std::string name, ModelRunner& runner, std::string context = std::string())
      : name_(std::move(name)), runner_(&runner), context_(std::move(context)) {}
  // Owned (a null `runner` makes an agent the driver refuses).
  Agent(std::string name, std::unique_ptr<ModelRunner> runner, std::string context = std::string())
      : name_(std::move(name)), owned_(std::move(runner)), runner_(owned_.get()), context_(std::move(context)) {}

  // Moving leaves the source without a runner.
  Agent(Agent&& other) noexcept
      : name_(std::move(other.name_)),
        owned_(std::move(other.owned_)),
        runner_(std::exchange(other.runner_, nullptr)),
        context_(std::move(other.context_)) {}
  Agent& operator=(Agent&& other) noexcept {
    name_ = std::move(other.name_);
    owned_ = std::move(other.owned_);
    runner_ = std::exchange(other.runner_, nullptr);
    context_ = std::move(other.context_);
    return *this;
  }
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Names the agent in errors and statistics.
  const std::string& name() const { return name_; }
  // The agent's runner, or null. A handle: a const Agent still gives a
  // runner that can be evaluated.
  ModelRunner* runner() const { return runner_; }
  bool ownsRunner() const { return owned_ != nullptr; }
  // Optional context name (the agent's role) the driver sends to the runner;
  // see DriverOptions::contextMode.
  const std::string& context() const { return context_; }

 private:
  std::string name_;
  std::unique_ptr<ModelRunner> owned_;
  ModelRunner* runner_ = nullptr;
  std::string context_;
};

// Index of the first agent named `name`, or -1: lets an environment address
// agents by role rather than by position.
int findAgent(Span<const Agent> agents, std::string_view name);

}  // namespace rl
}  // namespace mlbridge

#endif  // MLBRIDGE_RL_AGENT_H
