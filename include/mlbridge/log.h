// The library prints nothing by itself. Set a hook to see its diagnostics
// (e.g. a runner that had to kill a stale session).
#ifndef MLBRIDGE_LOG_H
#define MLBRIDGE_LOG_H

namespace mlbridge {

enum class LogLevel { kDebug, kInfo, kWarning, kError };
// `user` is passed back unchanged. Pass nullptr to remove the hook.
// The hook may be called from any thread that uses the library.
using LogHook = void (*)(LogLevel level, const char* message, void* user);
void setLogHook(LogHook hook, void* user);

}  // namespace mlbridge

#endif  // MLBRIDGE_LOG_H
