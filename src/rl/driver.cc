#include "mlbridge/rl_driver.h"

#include <limits>

namespace mlbridge {
namespace rl {

namespace {

// Error paths only: these allocate.
std::string agentLabel(const Agent& agent, size_t index) {
  std::string label = agent.name().empty() ? std::string("agent") : "agent '" + agent.name() + "'";
  return label + " (#" + std::to_string(index) + ")";
}

Status annotate(const Status& s, const std::string& where) { return Status(s.code(), where + ": " + s.message()); }

}  // namespace

StatusOr<EpisodeStats> Driver::runEpisode(Environment& env, Span<const Agent> agents, const DriverOptions& options) {
  ++episodes_;
  Status s = run(env, agents, options);
  if (!s.ok()) return s;
  return last_;
}

Status Driver::run(Environment& env, Span<const Agent> agents, const DriverOptions& options) {
  last_.steps = 0;
  last_.failedAgent = -1;
  last_.decisions.assign(agents.size(), 0);
  if (agents.empty()) return invalidArgument("rl::Driver: an episode needs at least one agent");
  if (agents.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return invalidArgument("rl::Driver: too many agents");
  for (size_t i = 0; i < agents.size(); ++i)
    if (!agents[i].runner()) return invalidArgument("rl::Driver: " + agentLabel(agents[i], i) + " has no runner");
  if (options.maxSteps <= 0)
    return invalidArgument("rl::Driver: maxSteps must be positive, got " + std::to_string(options.maxSteps));

  // Contexts: composed once per episode; runnerSlot_[i] is the first agent
  // with agents[i]'s runner, and sentBy_[slot] the agent whose context that
  // runner last got (-1: none this episode).
  const bool useContexts = options.contextMode != ContextMode::kNone;
  if (useContexts) {
    contexts_.resize(agents.size());
    runnerSlot_.resize(agents.size());
    sentBy_.assign(agents.size(), -1);
    for (size_t i = 0; i < agents.size(); ++i) {
      std::string& c = contexts_[i];
      c.assign(options.context.data(), options.context.size());
      if (!c.empty() && !agents[i].context().empty()) c += '/';
      c += agents[i].context();
      size_t slot = i;
      for (size_t j = 0; j < i; ++j)
        if (agents[j].runner() == agents[i].runner()) {
          slot = j;
          break;
        }
      runnerSlot_[i] = static_cast<int>(slot);
    }
  }
  // Sends agent a's context to its runner unless that runner already has it.
  auto sendContext = [&](int a) -> Status {
    const std::string& c = contexts_[a];
    int& sent = sentBy_[runnerSlot_[a]];
    if (c.empty() || (sent >= 0 && contexts_[sent] == c)) return Status::OK();
    Status s = agents[a].runner()->setContext(c);
    if (!s.ok()) {
      last_.failedAgent = a;
      return annotate(s, agentLabel(agents[a], static_cast<size_t>(a)) + ": setContext(\"" + c + "\")");
    }
    sent = a;
    return Status::OK();
  };

  Status s = env.reset();
  if (!s.ok()) return annotate(s, "environment: reset");
  if (options.contextMode == ContextMode::kPerEpisode)
    for (size_t i = 0; i < agents.size(); ++i) MLBRIDGE_RETURN_IF_ERROR(sendContext(static_cast<int>(i)));

  const int agentCount = static_cast<int>(agents.size());
  while (!env.done()) {
    const int64_t step = last_.steps;
    if (step >= options.maxSteps)
      return Status(StatusCode::kResourceExhausted,
                    "rl::Driver: episode not done after " + std::to_string(step) +
                        " steps (DriverOptions::maxSteps); the environment may never finish");
    StatusOr<int> next = env.nextAgent();
    if (!next.ok()) return annotate(next.status(), "environment at step " + std::to_string(step) + ": nextAgent");
    const int a = *next;
    if (a < 0 || a >= agentCount)
      return Status(StatusCode::kOutOfRange, "environment at step " + std::to_string(step) + ": nextAgent returned " +
                                                 std::to_string(a) + ", but there are " +
                                                 std::to_string(agentCount) + " agents (0.." +
                                                 std::to_string(agentCount - 1) + ")");
    if (options.contextMode == ContextMode::kPerDecision) MLBRIDGE_RETURN_IF_ERROR(sendContext(a));
    ModelRunner& runner = *agents[a].runner();
    const char* phase = "observe";
    s = env.observe(a, runner);
    if (s.ok()) {
      phase = "evaluate";
      s = runner.evaluate();
    }
    if (s.ok()) {
      phase = "step";
      s = env.step(a, runner);
    }
    if (!s.ok()) {
      last_.failedAgent = a;
      return annotate(s, agentLabel(agents[a], static_cast<size_t>(a)) + " at step " + std::to_string(step) + ": " +
                             phase);
    }
    ++last_.steps;
    ++last_.decisions[static_cast<size_t>(a)];
  }
  return Status::OK();
}

StatusOr<EpisodeStats> runEpisode(Environment& env, Span<const Agent> agents, const DriverOptions& options) {
  Driver driver;
  return driver.runEpisode(env, agents, options);
}

}  // namespace rl
}  // namespace mlbridge
