// ChannelOptions: the settings every local channel to a model process shares
// (named pipes: PipeOptions; shared memory: ShmOptions). Set fields by name:
//
//   mlbridge::PipeOptions opts;
//   opts.base = "/run/user/1000/mlbridge-x/chan";
//   opts.format = mlbridge::WireFormat::kJson;
#ifndef MLBRIDGE_CHANNEL_OPTIONS_H
#define MLBRIDGE_CHANNEL_OPTIONS_H

#include <cstddef>
#include <string>

#include "mlbridge/wire_format.h"

namespace mlbridge {

struct ChannelOptions {
  std::string base;                         // channel base path (pipes: BASE.in/BASE.out; shm: BASE.shm)
  WireFormat format = WireFormat::kBitstream;
  int timeoutMs = 10000;                    // bound on each request's write and reply
  int connectTimeoutMs = 10000;             // bound on waiting for the model (and, framed, its acceptance)
  bool allowSharedFolder = false;           // accept a folder other users can access (not recommended)
  size_t maxMessageBytes = size_t(256) << 20;  // larger replies are refused before allocation
};

}  // namespace mlbridge

#endif  // MLBRIDGE_CHANNEL_OPTIONS_H
