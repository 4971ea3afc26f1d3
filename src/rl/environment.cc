#include "mlbridge/rl_environment.h"

namespace mlbridge {
namespace rl {

Environment::~Environment() = default;

Status LambdaEnvironment::reset() {
  const char* missing = !onDone ? "onDone" : !onObserve ? "onObserve" : !onStep ? "onStep" : nullptr;
  if (missing) return failedPrecondition(std::string("LambdaEnvironment: ") + missing + " is not set");
  return onReset ? onReset() : Status::OK();
}

// Unset callbacks: reset() has already failed the episode; these only keep
// the object safe to call.
bool LambdaEnvironment::done() { return onDone ? onDone() : true; }

StatusOr<int> LambdaEnvironment::nextAgent() { return onNextAgent ? onNextAgent() : StatusOr<int>(0); }

Status LambdaEnvironment::observe(int agent, ModelRunner& runner) {
  return onObserve ? onObserve(agent, runner) : failedPrecondition("LambdaEnvironment: onObserve is not set");
}

Status LambdaEnvironment::step(int agent, const ModelRunner& runner) {
  return onStep ? onStep(agent, runner) : failedPrecondition("LambdaEnvironment: onStep is not set");
}

}  // namespace rl
}  // namespace mlbridge
