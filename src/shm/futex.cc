#include "shm/futex.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace mlbridge {
namespace shm {

bool futexWait(uint32_t* word, uint32_t expected, int timeoutMs) {
  struct timespec ts;
  ts.tv_sec = timeoutMs / 1000;
  ts.tv_nsec = static_cast<long>(timeoutMs % 1000) * 1000000L;
  long r = syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);
  return !(r != 0 && errno == ETIMEDOUT);
}

void futexWake(uint32_t* word) { (void)syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

int currentCpu() { return sched_getcpu(); }

bool PeerWatch::watch(pid_t pid) {
  reset();
  pid_ = pid;
  if (pid <= 0) return false;
  long fd = syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    pidfd_ = static_cast<int>(fd);
    return alive();
  }
  return errno != ESRCH && alive();
}

bool PeerWatch::alive() const {
  if (pid_ <= 0) return false;
  if (pidfd_ >= 0) {
    struct pollfd p = {pidfd_, POLLIN, 0};
    return poll(&p, 1, 0) == 0;  // readable once the process has exited
  }
  return kill(pid_, 0) == 0 || errno == EPERM;
}

void PeerWatch::reset() {
  if (pidfd_ >= 0) ::close(pidfd_);
  pidfd_ = -1;
  pid_ = 0;
}

}  // namespace shm
}  // namespace mlbridge
