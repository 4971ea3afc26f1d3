// Deadline-bounded I/O on non-blocking file descriptors. Every call returns
// within its deadline; EOF, EPIPE and poll errors become Status values, and
// SIGPIPE never reaches the process.
#ifndef MLBRIDGE_SRC_PIPE_FD_IO_H
#define MLBRIDGE_SRC_PIPE_FD_IO_H

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "mlbridge/status.h"

namespace mlbridge {
namespace pipe {

class Deadline {
 public:
  explicit Deadline(int timeoutMs)
      : end_(std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs < 0 ? 0 : timeoutMs)) {}
  // Milliseconds left, rounded up, never negative.
  int remainingMs() const;
  bool expired() const { return std::chrono::steady_clock::now() >= end_; }

 private:
  std::chrono::steady_clock::time_point end_;
};

// Growing pauses between retries (1, 2, 4, ... up to 50 ms), never past the deadline.
class Backoff {
 public:
  void pause(const Deadline& deadline);

 private:
  int ms_ = 1;
};

// Writes all bytes of `iov` (modified in place as it advances). `what` names
// the peer and channel for error messages. `guardSigpipe` blocks SIGPIPE in
// this thread during the write (skip it only when SIGPIPE is ignored).
Status writeAll(int fd, iovec* iov, int iovcnt, const Deadline& deadline, const char* what, bool guardSigpipe);
// Reads at least `min` and at most `cap` bytes into `buf`; *got is set to the
// count read. EOF before `min` bytes is kUnavailable.
Status readAtLeast(int fd, void* buf, size_t min, size_t cap, size_t* got, const Deadline& deadline, const char* what);
// Bytes waiting to be read (FIONREAD); 0 on error.
size_t bytesAvailable(int fd);
// Whether SIGPIPE is currently ignored by the process (then no per-write guard is needed).
bool sigpipeIgnored();

}  // namespace pipe
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_PIPE_FD_IO_H
