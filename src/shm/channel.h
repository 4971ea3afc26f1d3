// One end of a shared-memory channel (docs/shm.md): the region BASE.shm
// mapped by both processes, a byte ring per direction, and the
// spin-then-block wait on the peer's futex word. The compiler end connects
// (ShmModelRunner); the model end creates the region and accepts sessions
// (mlbridge.ShmServer in Python; this class in C++ tests and tools).
//
// Every wait is bounded by a deadline and notices a peer that hangs up or
// dies. A stream carries exactly the bytes a pipe would, so the codecs in
// src/wire are reused unchanged. Nothing here allocates after setup.
#ifndef MLBRIDGE_SRC_SHM_CHANNEL_H
#define MLBRIDGE_SRC_SHM_CHANNEL_H

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>

#include "mlbridge/status.h"
#include "pipe/fd_io.h"
#include "shm/futex.h"

namespace mlbridge {
namespace shm {

class Channel {
 public:
  enum class Role { kCompiler, kModel };

  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Model end: creates BASE.shm (mode 0600, in a private folder) with rings
  // of `ringBytes` each (rounded up to a power of two), atomically by rename.
  static StatusOr<std::unique_ptr<Channel>> create(const std::string& base, uint32_t ringBytes, int spinUs,
                                                   bool allowSharedFolder = false);
  // Compiler end: waits for BASE.shm and a live model, claims the channel
  // (one compiler at a time) and waits until the model accepts the session.
  static StatusOr<std::unique_ptr<Channel>> connect(const std::string& base, int connectTimeoutMs, int spinUs,
                                                    bool allowSharedFolder = false);

  // Model end: waits for a compiler's session and accepts it.
  Status accept(const pipe::Deadline& deadline);

  // Writes all bytes (waiting for ring space as needed), then wakes the peer.
  Status write(const iovec* iov, int iovcnt, const pipe::Deadline& deadline, const char* what);
  // Reads at least `min` and at most `cap` bytes; *got is the count read.
  // A peer that hung up or died before `min` bytes is kUnavailable.
  Status readAtLeast(void* buf, size_t min, size_t cap, size_t* got, const pipe::Deadline& deadline,
                     const char* what);
  // Unread incoming bytes.
  size_t available() const;

  // Ends the session from this side: the compiler's clean end, or the
  // model's hang-up. The compiler also releases its claim.
  void end();

  const std::string& path() const { return path_; }
  uint32_t session() const { return session_; }
  uint32_t ringBytes() const { return outCap_; }

 private:
  enum class Event { kNone, kReady, kClosed };
  Channel(Role role, int fd, uint8_t* map, size_t size, std::string path, int spinUs);
  void bindWords();
  uint32_t load(size_t off) const;
  void store(size_t off, uint32_t v);
  // What a sleeping side waits for (its "waiting" word): freed space only
  // wakes a producer that waits for space, so consuming a message never
  // wakes a peer that waits for its next one.
  enum : uint32_t { kWaitEvent = 1, kWaitSpace = 2 };
  void signal(bool freedSpace = false);  // bump our bell, wake the peer if it sleeps for this
  void ring();    // bump our bell and wake unconditionally (cold paths)
  bool peerClosedWord() const;
  template <class Check>
  Status waitFor(Check check, const pipe::Deadline& deadline, const char* what, Event* event,
                 uint32_t waitingFor = kWaitEvent);
  Status peerGone(const char* what, size_t have, size_t want) const;
  Status corrupt(const char* what) const;

  Role role_;
  int fd_;
  uint8_t* map_;
  size_t size_;
  std::string path_;
  int spinUs_;
  // The ring we write (compiler: requests) and the one we read.
  uint8_t* outData_ = nullptr;
  uint8_t* inData_ = nullptr;
  uint32_t outCap_ = 0, inCap_ = 0;
  size_t outTailW_ = 0, outHeadW_ = 0, inTailW_ = 0, inHeadW_ = 0;
  size_t myBellW_ = 0, peerBellW_ = 0, myWaitingW_ = 0, peerWaitingW_ = 0, myCpuW_ = 0, peerCpuW_ = 0;
  uint32_t outTail_ = 0, inHead_ = 0, bell_ = 0;  // our own words, cached
  uint32_t session_ = 0;
  PeerWatch peer_;
  bool ended_ = false;
};

}  // namespace shm
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_SHM_CHANNEL_H
