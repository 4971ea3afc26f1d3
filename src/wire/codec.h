// Codec: one wire format's encoder and decoders (docs/protocol.md).
// Internal interface shared by the pipe runner, the tools and the tests.
#ifndef MLBRIDGE_SRC_WIRE_CODEC_H
#define MLBRIDGE_SRC_WIRE_CODEC_H

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mlbridge/span.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_ref.h"
#include "mlbridge/tensor_spec.h"
#include "mlbridge/wire_format.h"
#include "wire/output_list.h"

namespace mlbridge {
namespace wire {

struct SessionSpecs {
  std::vector<TensorSpec> features;
  std::vector<TensorSpec> advice;
};

// An owned, decoded message (cold paths: tools, tests, replay).
struct DecodedTensor {
  TensorSpec spec;
  std::vector<unsigned char> bytes;  // numeric tensors
  std::vector<std::string> strings;  // kString tensors
  TensorRef ref() const {
    return TensorRef{&spec, spec.type() == DType::kString ? static_cast<const void*>(strings.data())
                                                          : static_cast<const void*>(bytes.data())};
  }
};
struct DecodedMessage {
  // kOutcome: a training log's score record (bitstream only: LLVM's
  // TrainingLogger writes one after each observation when its header has a score).
  enum class Kind { kHeader, kContext, kObservation, kReply, kEnd, kOutcome };
  Kind kind = Kind::kEnd;
  SessionSpecs specs;                  // kHeader
  std::vector<TensorSpec> score;       // kHeader of a training log: its score spec
  std::string name;                    // kContext
  int64_t id = 0;                      // kObservation, kReply, kOutcome
  std::vector<DecodedTensor> tensors;  // kObservation, kReply, kOutcome
  bool hasError = false;               // kReply
  std::string error;
};

// Framed formats: the 8-byte preamble and the 4-byte length prefix.
constexpr size_t kPreambleSize = 8;
constexpr size_t kFrameHeaderSize = 4;
constexpr size_t kDefaultMaxFrameBytes = size_t(256) << 20;

class Codec {
 public:
  virtual ~Codec() = default;
  virtual WireFormat format() const = 0;
  bool framed() const { return format() != WireFormat::kBitstream; }
  // kUnimplemented if this format cannot carry the dtype (bitstream: strings).
  virtual Status checkSpecs(const SessionSpecs& specs) const = 0;

  // ---- compiler -> model; each appends one complete message (framed
  // formats: preamble (header only) + length prefix + payload) to `out`.
  virtual Status encodeHeader(const SessionSpecs& specs, OutputList& out) = 0;
  virtual Status encodeContext(std::string_view name, OutputList& out) = 0;
  // `features` are in header order; their bytes may be referenced, not copied.
  virtual Status encodeObservation(int64_t id, Span<const TensorRef> features, OutputList& out) = 0;
  virtual Status encodeEnd(OutputList& out) = 0;

  // ---- model -> compiler
  virtual Status encodeReply(int64_t id, Span<const TensorRef> advice, OutputList& out) = 0;
  virtual Status encodeReplyError(int64_t id, std::string_view message, OutputList& out) = 0;

  // Hot path (framed formats only): decode one reply payload (without the
  // length prefix) straight into the runner's output buffers, checking id,
  // names, dtypes and shapes against outputs[i].spec. No heap allocation
  // unless the model sent an error (then kAborted with its message) or the
  // outputs are strings. A header acknowledgment has expectedId -1 and no outputs.
  virtual Status decodeReply(Span<const uint8_t> payload, int64_t expectedId,
                             Span<const MutableTensorRef> outputs) const = 0;

  // Cold path: a whole recorded stream in one direction. Bitstream replies
  // need `specs` to know their sizes; other cases ignore it.
  virtual Status decodeToModelStream(Span<const uint8_t> bytes, std::vector<DecodedMessage>& out) const = 0;
  virtual Status decodeToCompilerStream(Span<const uint8_t> bytes, const SessionSpecs& specs,
                                        std::vector<DecodedMessage>& out) const = 0;
};

std::unique_ptr<Codec> makeCodec(WireFormat format);
std::unique_ptr<Codec> makeBitstreamCodec();
std::unique_ptr<Codec> makeJsonCodec();
std::unique_ptr<Codec> makeProtobufCodec();

// What a framed codec's reply decoder read; checkReply turns it into the
// status of decodeReply, with the same rules and messages in every format.
struct ReplySummary {
  bool sawReply = false;   // the message was a reply
  bool hasId = true;       // json: "id" may be absent (protobuf: defaults to 0)
  int64_t id = 0;
  bool hasTensors = true;  // json: "tensors" may be absent (protobuf: an empty list)
  size_t tensors = 0;      // tensors decoded into the outputs
  bool hasError = false;
  std::string_view error;  // the model's message, when hasError
};
// OK, kAborted (the model refused this request), kUnavailable (the model
// ended the session: an error reply with id -1 mid-session) or kDataLoss.
// Allocates only when the reply is not OK.
Status checkReply(const ReplySummary& reply, int64_t expectedId, size_t expectedTensors);

// Shared by framed codecs: checks a decoded tensor against the spec it must
// match (name, dtype, shape), with a message naming the tensor.
Status checkTensorAgainstSpec(const TensorSpec& expected, std::string_view name, DType type,
                              Span<const int64_t> shape, const char* what);

}  // namespace wire
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_WIRE_CODEC_H
