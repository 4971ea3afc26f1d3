#include "mlbridge/log.h"

#include <atomic>

#include "log_internal.h"
#include "mlbridge/version.h"

namespace mlbridge {

namespace {
struct Hook {
  LogHook fn;
  void* user;
};
std::atomic<Hook*> gHook{nullptr};
Hook gHooks[2];
std::atomic<int> gSlot{0};
}  // namespace

void setLogHook(LogHook hook, void* user) {
  // Two slots so a concurrent logger never sees a half-written hook.
  int slot = gSlot.fetch_xor(1) ^ 1;
  gHooks[slot] = Hook{hook, user};
  gHook.store(hook ? &gHooks[slot] : nullptr, std::memory_order_release);
}

void logMessage(LogLevel level, const std::string& message) {
  Hook* h = gHook.load(std::memory_order_acquire);
  if (h && h->fn) h->fn(level, message.c_str(), h->user);
}

const char* versionString() { return "0.1.0"; }

}  // namespace mlbridge
