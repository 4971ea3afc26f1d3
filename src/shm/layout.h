// The shared-memory channel's region layout (docs/shm.md, "Region"). The
// Python side (python/mlbridge/shm.py) uses the same offsets: change both.
//
// A region is one file BASE.shm: a 4 KiB control page, then the request ring
// (compiler -> model), then the reply ring (model -> compiler). Every control
// word is a little-endian u32 with exactly one writer; words written by the
// compiler and by the model live on different cache lines.
#ifndef MLBRIDGE_SRC_SHM_LAYOUT_H
#define MLBRIDGE_SRC_SHM_LAYOUT_H

#include <cstddef>
#include <cstdint>

namespace mlbridge {
namespace shm {

constexpr char kMagic[8] = {'M', 'L', 'B', 'R', 'S', 'H', 'M', '1'};
constexpr uint32_t kLayoutVersion = 1;
constexpr size_t kControlBytes = 4096;  // ring data starts here
constexpr uint32_t kMinRingBytes = 4096;
constexpr uint32_t kMaxRingBytes = uint32_t(1) << 30;
// serverClosed value meaning "the model process closed the channel for good".
constexpr uint32_t kServerGone = 0xFFFFFFFFu;

// Byte offsets of the u32 control words.
enum Word : size_t {
  // Written once by the model, before the file is renamed into place.
  kVersion = 8,
  kDataOffset = 12,
  kRequestBytes = 16,  // ring capacities, powers of two
  kReplyBytes = 20,
  kServerPid = 24,
  // Compiler's cache line.
  kClientPid = 64,
  kSession = 68,        // bumped by each compiler that claims the channel
  kClientClosed = 72,   // = session when that compiler ended it
  kClientWaiting = 76,  // 1 while the compiler sleeps on kServerBell
  kReqTail = 80,        // request bytes written (mod 2^32)
  kRepHead = 84,        // reply bytes consumed
  kClientBell = 88,     // futex word: bumped on every compiler event
  kClientCpu = 92,      // CPU the compiler last waited on (spin hint)
  // Model's cache line.
  kAccepted = 128,      // = session once the model accepted it
  kServerClosed = 132,  // = session when the model hung up; kServerGone at exit
  kServerWaiting = 136, // 1 while the model sleeps on kClientBell
  kReqHead = 140,       // request bytes consumed
  kRepTail = 144,       // reply bytes written
  kServerBell = 148,    // futex word: bumped on every model event
  kServerCpu = 152,
};

}  // namespace shm
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_SHM_LAYOUT_H
