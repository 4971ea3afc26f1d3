// The framing shared by the json and protobuf formats (docs/protocol.md):
// an 8-byte preamble per session, then u32 little-endian length + payload.
#ifndef MLBRIDGE_SRC_WIRE_FRAMING_H
#define MLBRIDGE_SRC_WIRE_FRAMING_H

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mlbridge/span.h"
#include "mlbridge/status.h"
#include "wire/codec.h"

namespace mlbridge {
namespace wire {

// What a framed codec says about itself in preambles and error messages.
struct FrameFormat {
  char letter;       // 'J' or 'P'
  const char* name;  // "json" or "protobuf"
};

void appendPreamble(std::string& s, FrameFormat f);
void appendFrameLength(std::string& s, size_t len);
inline uint32_t readFrameLength(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
// kResourceExhausted when `len` does not fit the 4-byte length prefix.
Status checkFrameSize(size_t len, const char* what);
// Checks the preamble at b[pos]: magic, protocol version, format letter.
Status checkPreamble(Span<const uint8_t> b, size_t pos, FrameFormat f);

// Calls onPayload(payload, byteOffset) for every frame of a recorded stream.
// With `preamble`, the stream starts with one, and a new preamble may start a
// new session anywhere a frame could (its "MLBR" is far over any frame limit).
template <class F>
Status forEachFrame(Span<const uint8_t> b, bool preamble, FrameFormat f, F onPayload) {
  const std::string name = std::string(f.name) + " stream: ";
  size_t pos = 0;
  if (preamble) {
    MLBRIDGE_RETURN_IF_ERROR(checkPreamble(b, 0, f));
    pos = kPreambleSize;
  }
  while (pos < b.size()) {
    size_t left = b.size() - pos;
    if (preamble && left >= 4 && std::memcmp(b.data() + pos, "MLBR", 4) == 0) {
      MLBRIDGE_RETURN_IF_ERROR(checkPreamble(b, pos, f));
      pos += kPreambleSize;
      continue;
    }
    if (left < kFrameHeaderSize) return dataLoss(name + "truncated frame length at byte " + std::to_string(pos));
    const uint8_t* p = b.data() + pos;
    size_t len = readFrameLength(p);
    if (len > kDefaultMaxFrameBytes)
      return dataLoss(name + "frame at byte " + std::to_string(pos) + " announces " + std::to_string(len) +
                      " bytes, over the limit of " + std::to_string(kDefaultMaxFrameBytes));
    if (left - kFrameHeaderSize < len)
      return dataLoss(name + "truncated frame at byte " + std::to_string(pos) + ": " + std::to_string(len) +
                      " bytes announced, " + std::to_string(left - kFrameHeaderSize) + " present");
    Status s = onPayload(Span<const uint8_t>(p + kFrameHeaderSize, len), pos);
    if (!s.ok()) return Status(s.code(), name + "frame at byte " + std::to_string(pos) + ": " + s.message());
    pos += kFrameHeaderSize + len;
  }
  return Status::OK();
}

// What the json and protobuf codecs do alike, written once: they accept the
// same specs, and read a recorded stream the same way, frame by frame,
// differing only in how one payload becomes a message (the decoder each
// passes in). Stream decoding is a cold path (tools, tests, replay).
class FramedCodec : public Codec {
 public:
  // Both carry every dtype; tensor names must be valid UTF-8.
  Status checkSpecs(const SessionSpecs& specs) const final;

  // One frame's payload into `m`; `toModel` selects which kinds are allowed
  // (compiler -> model: all but replies; model -> compiler: replies only).
  using MessageDecoder = Status (*)(Span<const uint8_t> payload, bool toModel, DecodedMessage& m);

  Status decodeToModelStream(Span<const uint8_t> bytes, std::vector<DecodedMessage>& out) const final;
  // `specs` is not needed: framed replies carry their own names, dtypes and shapes.
  Status decodeToCompilerStream(Span<const uint8_t> bytes, const SessionSpecs& specs,
                                std::vector<DecodedMessage>& out) const final;

 protected:
  FramedCodec(FrameFormat frame, MessageDecoder decodeMessage) : frame_(frame), decodeMessage_(decodeMessage) {}

 private:
  // The compiler -> model stream starts with a preamble (and may hold several
  // sessions); the model -> compiler stream has none.
  Status decodeStream(Span<const uint8_t> bytes, bool toModel, std::vector<DecodedMessage>& out) const;

  FrameFormat frame_;
  MessageDecoder decodeMessage_;
};

}  // namespace wire
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_WIRE_FRAMING_H
