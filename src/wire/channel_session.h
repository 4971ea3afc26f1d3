// ChannelSession: the compiler's side of one session with a model over a
// byte stream (docs/protocol.md), whatever carries the bytes: the session
// header and, in framed formats, the model's acceptance; observations and
// their replies (checked against the expected id); contexts; the end of the
// session. The first transport error breaks the session for good: later
// calls report it. PipeModelRunner (FIFOs) and ShmModelRunner (shared-memory
// rings) are this class over their own ByteTransport.
//
// Buffers (the outgoing message list, the reply buffer) are reused: after
// warm-up a decision allocates nothing here, and costs one virtual call per
// transport operation.
#ifndef MLBRIDGE_SRC_WIRE_CHANNEL_SESSION_H
#define MLBRIDGE_SRC_WIRE_CHANNEL_SESSION_H

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mlbridge/channel_options.h"
#include "mlbridge/span.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_ref.h"
#include "mlbridge/tensor_spec.h"
#include "pipe/fd_io.h"
#include "wire/codec.h"
#include "wire/output_list.h"

namespace mlbridge {
namespace wire {

// A bidirectional byte stream to the model. Every call returns within its
// deadline; a peer that hung up is kUnavailable, a timeout kDeadlineExceeded.
// `what` names the operation and channel for error messages.
class ByteTransport {
 public:
  virtual ~ByteTransport() = default;
  // Writes all bytes of `iov`; the entries may be advanced in place.
  virtual Status writeAll(iovec* iov, int iovcnt, const pipe::Deadline& deadline, const char* what) = 0;
  // Reads at least `min` and at most `cap` bytes into `buf`; *got is the count read.
  virtual Status readAtLeast(void* buf, size_t min, size_t cap, size_t* got, const pipe::Deadline& deadline,
                             const char* what) = 0;
  // Incoming bytes not read yet (0 if none or unknown).
  virtual size_t available() = 0;
};

// Checks the fields every channel needs: `optionsName` (e.g. "PipeOptions")
// and `kind` (e.g. "pipe") word the messages.
Status checkChannelOptions(const ChannelOptions& options, const char* optionsName, const char* kind);

class ChannelSession {
 public:
  // Picks the codec and checks that it can carry the specs. `writeChannel`
  // and `readChannel` (paths) name the channel in error messages.
  Status init(const ChannelOptions& options, const std::vector<TensorSpec>& features,
              const std::vector<TensorSpec>& advice, const std::string& writeChannel,
              const std::string& readChannel);
  // Starts the session on a connected transport (which must outlive it):
  // sends the header; framed formats also wait for the model to accept.
  Status start(ByteTransport* transport);
  Status evaluate(Span<const TensorRef> features, Span<const MutableTensorRef> advice);
  Status setContext(std::string_view name);
  // Tells the model the session ends (unless no transport was started or the
  // session is broken) and detaches the transport; the caller closes it.
  Status finish();

 private:
  Status sendPending(const char* what);
  Status readReply(int64_t expectedId, Span<const MutableTensorRef> outputs);
  Status fail(Status s);
  Status checkUsable() const;

  std::unique_ptr<Codec> codec_;
  SessionSpecs specs_;  // copies for the header
  OutputList out_;
  std::vector<uint8_t> reply_;  // reused reply buffer
  std::string writeWhat_, readWhat_;  // error-message prefixes, built once
  ByteTransport* transport_ = nullptr;
  int timeoutMs_ = 0;
  size_t maxMessageBytes_ = 0;
  int64_t nextId_ = 0;
  Status broken_;  // first transport error; later calls report it
};

}  // namespace wire
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_WIRE_CHANNEL_SESSION_H
