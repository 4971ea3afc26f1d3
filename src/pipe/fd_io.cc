#include "pipe/fd_io.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <time.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "pipe/sys_util.h"

namespace mlbridge {
namespace pipe {

int Deadline::remainingMs() const {
  auto left = end_ - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left + std::chrono::microseconds(999)).count();
  return ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
}

void Backoff::pause(const Deadline& deadline) {
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min(ms_, deadline.remainingMs())));
  ms_ = std::min(ms_ * 2, 50);
}

namespace {

// Blocks SIGPIPE in this thread for the duration of a write, and swallows a
// SIGPIPE the write raised, so a dead peer becomes EPIPE, never a signal.
// (Pipes have no MSG_NOSIGNAL.) The previous mask is restored.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipeSet_);
    sigaddset(&pipeSet_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    wasPending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipeSet_, &old_);
  }
  void sawEpipe() { epipe_ = true; }
  ~SigpipeGuard() {
    if (epipe_ && !wasPending_) {
      struct timespec zero = {0, 0};
      while (sigtimedwait(&pipeSet_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipeSet_;
  sigset_t old_;
  bool wasPending_ = false;
  bool epipe_ = false;
};

// Waits for `events` on fd; kOk when ready, errors on timeout or poll failure.
Status waitFor(int fd, short events, const Deadline& deadline, const char* what, short* revents) {
  for (;;) {
    struct pollfd p = {fd, events, 0};
    int r = poll(&p, 1, deadline.remainingMs());
    if (r > 0) {
      *revents = p.revents;
      if (p.revents & POLLNVAL) return internalError(std::string(what) + ": descriptor is not open");
      return Status::OK();
    }
    if (r == 0) return deadlineExceeded(std::string(what) + ": timed out");
    if (errno != EINTR) return internalError(std::string(what) + ": poll failed: " + errnoText(errno));
  }
}

}  // namespace

bool sigpipeIgnored() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  if (sigaction(SIGPIPE, nullptr, &sa) != 0) return false;
  return sa.sa_handler == SIG_IGN;
}

Status writeAll(int fd, iovec* iov, int iovcnt, const Deadline& deadline, const char* what, bool guardSigpipe) {
  std::optional<SigpipeGuard> guard;
  if (guardSigpipe) guard.emplace();
  while (iovcnt > 0) {
    if (iov->iov_len == 0) {
      ++iov;
      --iovcnt;
      continue;
    }
    ssize_t n = writev(fd, iov, iovcnt > IOV_MAX ? IOV_MAX : iovcnt);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) {
        if (guard) guard->sawEpipe();
        return unavailable(std::string(what) + ": the peer closed the channel (EPIPE)");
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        return unavailable(std::string(what) + ": write failed: " + errnoText(errno));
      short rev = 0;
      MLBRIDGE_RETURN_IF_ERROR(waitFor(fd, POLLOUT, deadline, what, &rev));
      if ((rev & POLLERR) && !(rev & POLLOUT))
        return unavailable(std::string(what) + ": the peer closed the channel");
      continue;
    }
    size_t left = static_cast<size_t>(n);
    while (iovcnt > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --iovcnt;
    }
    if (iovcnt > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return Status::OK();
}

Status readAtLeast(int fd, void* buf, size_t min, size_t cap, size_t* got, const Deadline& deadline,
                   const char* what) {
  size_t have = 0;
  char* p = static_cast<char*>(buf);
  while (have < min) {
    short rev = 0;
    MLBRIDGE_RETURN_IF_ERROR(waitFor(fd, POLLIN, deadline, what, &rev));
    ssize_t n = read(fd, p + have, cap - have);
    if (n > 0) {
      have += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      *got = have;
      return unavailable(std::string(what) + ": the peer closed the channel" +
                         (have ? " after " + std::to_string(have) + " of " + std::to_string(min) + " bytes" : ""));
    }
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    *got = have;
    return unavailable(std::string(what) + ": read failed: " + errnoText(errno));
  }
  *got = have;
  return Status::OK();
}

size_t bytesAvailable(int fd) {
  int n = 0;
  if (ioctl(fd, FIONREAD, &n) != 0 || n < 0) return 0;
  return static_cast<size_t>(n);
}

}  // namespace pipe
}  // namespace mlbridge
