// mlbridge RL: multi-agent reinforcement-learning episodes over ModelRunners.
//   rl_environment.h  Environment (implemented by the pass), LambdaEnvironment
//   rl_agent.h        Agent: a name and any ModelRunner
//   rl_driver.h       Driver: runs episodes with a step budget
// Concepts and an RL4ReAl-style hierarchical example: docs/rl.md.
#ifndef MLBRIDGE_RL_H
#define MLBRIDGE_RL_H

#include "mlbridge/rl_agent.h"
#include "mlbridge/rl_driver.h"
#include "mlbridge/rl_environment.h"

#endif  // MLBRIDGE_RL_H
