// The blocking half of the shared-memory channel's spin-then-block wait: a
// futex on a u32 in a MAP_SHARED file mapping (never FUTEX_PRIVATE: the
// waker is another process), a CPU hint for the spin, and a pidfd that tells
// whether the peer process is still alive.
#ifndef MLBRIDGE_SRC_SHM_FUTEX_H
#define MLBRIDGE_SRC_SHM_FUTEX_H

#include <sys/types.h>

#include <cstdint>

namespace mlbridge {
namespace shm {

// Sleeps while *word == expected, at most timeoutMs. Returns false on
// timeout, true otherwise (woken, value changed, or interrupted).
bool futexWait(uint32_t* word, uint32_t expected, int timeoutMs);
// Wakes every waiter on `word`.
void futexWake(uint32_t* word);

// One pause for a spin loop (lets the sibling hyperthread run).
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// The CPU this thread runs on, or -1 (a hint: spinning on the peer's CPU is useless).
int currentCpu();

// Whether a process still runs. A pidfd sees exit even before the parent
// reaps a zombie; without pidfds (old kernels) kill(pid, 0) is the fallback.
class PeerWatch {
 public:
  PeerWatch() = default;
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;
  ~PeerWatch() { reset(); }
  // False if `pid` does not exist (already dead).
  bool watch(pid_t pid);
  bool alive() const;
  pid_t pid() const { return pid_; }
  void reset();

 private:
  pid_t pid_ = 0;
  int pidfd_ = -1;
};

}  // namespace shm
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_SHM_FUTEX_H
