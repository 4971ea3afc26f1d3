// Library-internal logging through the user's hook (silent without one).
#ifndef MLBRIDGE_SRC_LOG_INTERNAL_H
#define MLBRIDGE_SRC_LOG_INTERNAL_H

#include <string>

#include "mlbridge/log.h"

namespace mlbridge {
void logMessage(LogLevel level, const std::string& message);
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_LOG_INTERNAL_H
