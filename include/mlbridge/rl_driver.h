// rl::Driver: runs episodes of an Environment with a list of Agents.
//
//   std::vector<rl::Agent> agents = ...;          // see rl_agent.h
//   rl::Driver driver;                             // reuse it across episodes
//   for (Function& f : module) {
//     MyEnvironment env(f);                        // see rl_environment.h
//     rl::DriverOptions opts;
//     opts.context = f.getName();                  // optional: names the episode
//     StatusOr<rl::EpisodeStats> stats = driver.runEpisode(env, agents, opts);
//     if (!stats.ok()) return report(stats.status());
//   }
//
// Guarantees:
//  * An episode ends when the environment is done. A step budget
//    (maxSteps) bounds it: an environment that never finishes is an error
//    (RESOURCE_EXHAUSTED), never an endless loop.
//  * The first error ends the episode. It keeps the code of its source and its
//    message names the agent (by name and index) and the step (counted from 0),
//    e.g. "UNAVAILABLE: agent 'colour' (#2) at step 7: evaluate: ...".
//    An out-of-range agent index from nextAgent() is OUT_OF_RANGE.
//  * The loop allocates nothing per step (the environment and the runners may).
//  * One driver is used by one thread at a time, like the runners.
#ifndef MLBRIDGE_RL_DRIVER_H
#define MLBRIDGE_RL_DRIVER_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mlbridge/rl_agent.h"
#include "mlbridge/rl_environment.h"
#include "mlbridge/span.h"
#include "mlbridge/status.h"

namespace mlbridge {
namespace rl {

// When the driver calls ModelRunner::setContext. The context an agent gets is
// "EPISODE/ROLE" from DriverOptions::context and Agent::context(), or the one
// of them that is set; an agent with neither gets no setContext call.
enum class ContextMode {
  kNone,         // never
  kPerEpisode,   // once per agent when an episode starts (default)
  kPerDecision,  // before an agent's decision when the previous one was another
                 // agent's: for agents that share a runner
};

struct DriverOptions {
  // Most decisions one episode may take; an episode not done by then fails.
  int64_t maxSteps = 1000000;
  // Names the episode (e.g. the function being compiled); read during the
  // runEpisode call only.
  std::string_view context;
  ContextMode contextMode = ContextMode::kPerEpisode;
};

struct EpisodeStats {
  int64_t steps = 0;               // decisions taken
  std::vector<int64_t> decisions;  // decisions[i]: decisions taken by agents[i]
  // Driver::lastEpisode() of a failed episode: the agent that was acting (or
  // had its context set), or -1 when the environment or the budget failed.
  int failedAgent = -1;
};

class Driver {
 public:
  Driver() = default;

  // Runs one episode: reset, then steps until done (see the file comment).
  StatusOr<EpisodeStats> runEpisode(Environment& env, Span<const Agent> agents,
                                    const DriverOptions& options = DriverOptions());
  // Statistics of the last episode, complete or not: after a failure, the
  // decisions taken before it.
  const EpisodeStats& lastEpisode() const { return last_; }
  // Episodes started by this driver (failed ones included).
  int64_t episodes() const { return episodes_; }

 private:
  Status run(Environment& env, Span<const Agent> agents, const DriverOptions& options);

  EpisodeStats last_;
  // Per agent, sized once per episode and reused across episodes.
  std::vector<std::string> contexts_;
  std::vector<int> runnerSlot_;
  std::vector<int> sentBy_;
  int64_t episodes_ = 0;
};

// One episode with a fresh driver.
StatusOr<EpisodeStats> runEpisode(Environment& env, Span<const Agent> agents,
                                  const DriverOptions& options = DriverOptions());

}  // namespace rl
}  // namespace mlbridge

#endif  // MLBRIDGE_RL_DRIVER_H
