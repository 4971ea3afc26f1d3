#include "mlbridge/rl_agent.h"

namespace mlbridge {
namespace rl {

int findAgent(Span<const Agent> agents, std::string_view name) {
  for (size_t i = 0; i < agents.size(); ++i)
    if (agents[i].name() == name) return static_cast<int>(i);
  return -1;
}

}  // namespace rl
}  // namespace mlbridge
