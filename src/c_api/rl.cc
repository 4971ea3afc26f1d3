// C API: multi-agent RL episodes (mlbridge::rl::Driver) with an environment
// made of C callbacks and agents made of mlb_runner handles.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "c_api/c_api_internal.h"
#include "mlbridge/rl.h"

using mlbridge::Status;
using mlbridge::StatusCode;
using mlbridge::StatusOr;
using mlbridge::invalidArgument;
using mlbridge::capi::guardError;
using mlbridge::capi::nullArgument;
namespace rl = mlbridge::rl;

struct mlb_rl_agents {
  std::vector<rl::Agent> agents;
  std::vector<mlb_runner*> handles;  // handles[i] is agents[i]'s runner
};

struct mlb_rl_options {
  rl::DriverOptions options;
  std::string context;  // options.context points here during an episode
};

struct mlb_rl_driver {
  rl::Driver driver;
};

namespace {

// The bytes of mlb_rl_environment that API level 1 defines.
constexpr size_t kEnvironmentSizeV1 = offsetof(mlb_rl_environment, step) + sizeof(mlb_rl_environment::step);

// rl::Environment over the C callbacks. Keeps the runner handles' "outputs
// available" flag right: the driver evaluates the C++ runner directly.
class CEnvironment final : public rl::Environment {
 public:
  CEnvironment(const mlb_rl_environment& callbacks, const std::vector<mlb_runner*>& handles)
      : cb_(callbacks), handles_(handles) {}

  Status reset() override {
    if (!cb_.reset) return Status::OK();
    mlb_error* e = nullptr;
    mlb_status code = cb_.reset(cb_.user, &e);
    return fromCallback("reset", code, e);
  }
  bool done() override { return cb_.done(cb_.user) != 0; }
  StatusOr<int> nextAgent() override {
    if (!cb_.next_agent) return 0;
    int32_t agent = -1;
    mlb_error* e = nullptr;
    mlb_status code = cb_.next_agent(cb_.user, &agent, &e);
    Status s = fromCallback("next_agent", code, e);
    if (!s.ok()) return s;
    return static_cast<int>(agent);
  }
  Status observe(int agent, mlbridge::ModelRunner&) override {
    mlb_runner* h = handles_[static_cast<size_t>(agent)];
    h->haveOutputs = false;  // the driver evaluates next
    mlb_error* e = nullptr;
    mlb_status code = cb_.observe(cb_.user, agent, h, &e);
    return fromCallback("observe", code, e);
  }
  Status step(int agent, const mlbridge::ModelRunner&) override {
    mlb_runner* h = handles_[static_cast<size_t>(agent)];
    h->haveOutputs = true;  // the driver calls step only after a successful evaluate
    mlb_error* e = nullptr;
    mlb_status code = cb_.step(cb_.user, agent, h, &e);
    return fromCallback("step", code, e);
  }

 private:
  // The callback's result as a Status; takes over (and frees) its error.
  static Status fromCallback(const char* what, mlb_status code, mlb_error* e) {
    Status s;
    if (code != MLB_OK) {
      std::string message = e && !e->message.empty()
                                ? e->message
                                : std::string("the ") + what + " callback returned " + mlb_status_name(code);
      s = Status(mlbridge::capi::fromC(code), std::move(message));
    }
    mlb_error_free(e);
    return s;
  }

  mlb_rl_environment cb_;
  const std::vector<mlb_runner*>& handles_;
};

}  // namespace

// ---- agents -----------------------------------------------------------------

extern "C" mlb_status mlb_rl_agents_create(mlb_rl_agents** agents, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!agents) return nullArgument("mlb_rl_agents_create", "agents");
    *agents = new mlb_rl_agents;
    return Status::OK();
  });
}

extern "C" void mlb_rl_agents_destroy(mlb_rl_agents* agents) noexcept { delete agents; }

extern "C" mlb_status mlb_rl_agents_add(mlb_rl_agents* agents, const char* name, mlb_runner* runner,
                                        const char* context, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!agents || !name || !runner) return nullArgument("mlb_rl_agents_add", "agents, name and runner");
    agents->agents.reserve(agents->agents.size() + 1);
    agents->handles.reserve(agents->handles.size() + 1);
    agents->agents.emplace_back(name, *runner->impl, context ? context : "");
    agents->handles.push_back(runner);
    return Status::OK();
  });
}

extern "C" mlb_status mlb_rl_agents_count(const mlb_rl_agents* agents, size_t* count, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!agents || !count) return nullArgument("mlb_rl_agents_count", "agents and count");
    *count = agents->agents.size();
    return Status::OK();
  });
}

extern "C" mlb_status mlb_rl_agents_find(const mlb_rl_agents* agents, const char* name, int32_t* index,
                                         mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!agents || !name || !index) return nullArgument("mlb_rl_agents_find", "agents, name and index");
    int i = rl::findAgent(mlbridge::Span<const rl::Agent>(agents->agents.data(), agents->agents.size()), name);
    if (i < 0) return Status(StatusCode::kNotFound, std::string("no agent named '") + name + "'");
    *index = i;
    return Status::OK();
  });
}

// ---- options ----------------------------------------------------------------

extern "C" mlb_status mlb_rl_options_create(mlb_rl_options** options, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_rl_options_create", "options");
    *options = new mlb_rl_options;
    return Status::OK();
  });
}

extern "C" void mlb_rl_options_destroy(mlb_rl_options* options) noexcept { delete options; }

extern "C" mlb_status mlb_rl_options_set_max_steps(mlb_rl_options* options, int64_t max_steps,
                                                   mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_rl_options_set_max_steps", "options");
    if (max_steps <= 0) return invalidArgument("max_steps must be positive, got " + std::to_string(max_steps));
    options->options.maxSteps = max_steps;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_rl_options_set_context(mlb_rl_options* options, const char* context,
                                                 mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_rl_options_set_context", "options");
    options->context = context ? context : "";
    return Status::OK();
  });
}

extern "C" mlb_status mlb_rl_options_set_context_mode(mlb_rl_options* options, mlb_rl_context_mode mode,
                                                      mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!options) return nullArgument("mlb_rl_options_set_context_mode", "options");
    switch (mode) {
      case MLB_RL_CONTEXT_NONE: options->options.contextMode = rl::ContextMode::kNone; break;
      case MLB_RL_CONTEXT_PER_EPISODE: options->options.contextMode = rl::ContextMode::kPerEpisode; break;
      case MLB_RL_CONTEXT_PER_DECISION: options->options.contextMode = rl::ContextMode::kPerDecision; break;
      default: return invalidArgument("unknown RL context mode " + std::to_string(mode));
    }
    return Status::OK();
  });
}

// ---- driver -----------------------------------------------------------------

extern "C" mlb_status mlb_rl_driver_create(mlb_rl_driver** driver, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!driver) return nullArgument("mlb_rl_driver_create", "driver");
    *driver = new mlb_rl_driver;
    return Status::OK();
  });
}

extern "C" void mlb_rl_driver_destroy(mlb_rl_driver* driver) noexcept { delete driver; }

extern "C" mlb_status mlb_rl_driver_run_episode(mlb_rl_driver* driver, const mlb_rl_environment* environment,
                                                const mlb_rl_agents* agents, const mlb_rl_options* options,
                                                int64_t* steps, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!driver || !environment || !agents)
      return nullArgument("mlb_rl_driver_run_episode", "driver, environment and agents");
    if (environment->struct_size < kEnvironmentSizeV1)
      return invalidArgument("mlb_rl_environment.struct_size is " + std::to_string(environment->struct_size) +
                             ", at least " + std::to_string(kEnvironmentSizeV1) +
                             " expected: set it to sizeof(mlb_rl_environment)");
    // Read only what the caller's struct has (a newer caller's extra fields
    // are unknown here).
    mlb_rl_environment callbacks;
    std::memset(&callbacks, 0, sizeof callbacks);
    std::memcpy(&callbacks, environment, std::min(environment->struct_size, sizeof callbacks));
    if (!callbacks.done || !callbacks.observe || !callbacks.step)
      return invalidArgument("mlb_rl_environment: the done, observe and step callbacks are required");
    for (size_t i = 0; i < agents->handles.size(); ++i)
      if (!agents->handles[i]->impl) return invalidArgument("agent " + std::to_string(i) + " has no runner");
    CEnvironment env(callbacks, agents->handles);
    rl::DriverOptions o;
    if (options) {
      o = options->options;
      o.context = options->context;
    }
    StatusOr<rl::EpisodeStats> stats = driver->driver.runEpisode(
        env, mlbridge::Span<const rl::Agent>(agents->agents.data(), agents->agents.size()), o);
    if (steps) *steps = driver->driver.lastEpisode().steps;
    return stats.status();
  });
}

extern "C" mlb_status mlb_rl_driver_last_episode(const mlb_rl_driver* driver, int64_t* steps, int64_t* decisions,
                                                 size_t count, int32_t* failed_agent, mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!driver) return nullArgument("mlb_rl_driver_last_episode", "driver");
    if (count && !decisions) return nullArgument("mlb_rl_driver_last_episode", "decisions (with count > 0)");
    const rl::EpisodeStats& last = driver->driver.lastEpisode();
    if (steps) *steps = last.steps;
    for (size_t i = 0; i < count; ++i) decisions[i] = i < last.decisions.size() ? last.decisions[i] : 0;
    if (failed_agent) *failed_agent = last.failedAgent;
    return Status::OK();
  });
}

extern "C" mlb_status mlb_rl_driver_episodes(const mlb_rl_driver* driver, int64_t* episodes,
                                             mlb_error** error) noexcept {
  return guardError(error, [&]() -> Status {
    if (!driver || !episodes) return nullArgument("mlb_rl_driver_episodes", "driver and episodes");
    *episodes = driver->driver.episodes();
    return Status::OK();
  });
}
