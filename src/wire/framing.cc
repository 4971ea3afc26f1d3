#include "wire/framing.h"

#include <utility>

#include "json/utf8.h"

namespace mlbridge {
namespace wire {

void appendPreamble(std::string& s, FrameFormat f) {
  const char p[kPreambleSize] = {'M', 'L', 'B', 'R', static_cast<char>(kProtocolVersion), f.letter, 0, 0};
  s.append(p, kPreambleSize);
}

void appendFrameLength(std::string& s, size_t len) {
  char b[4] = {static_cast<char>(len), static_cast<char>(len >> 8), static_cast<char>(len >> 16),
               static_cast<char>(len >> 24)};
  s.append(b, 4);
}

Status checkFrameSize(size_t len, const char* what) {
  if (len > 0xFFFFFFFFu)
    return Status(StatusCode::kResourceExhausted,
                  std::string(what) + " is " + std::to_string(len) + " bytes: too large for one frame");
  return Status::OK();
}

Status checkPreamble(Span<const uint8_t> b, size_t pos, FrameFormat f) {
  const std::string name = std::string(f.name) + " stream: ";
  if (b.size() - pos < kPreambleSize) return dataLoss(name + "truncated preamble at byte " + std::to_string(pos));
  if (std::memcmp(b.data() + pos, "MLBR", 4) != 0) return dataLoss(name + "no MLBR preamble at byte " + std::to_string(pos));
  if (b[pos + 4] != kProtocolVersion)
    return unimplemented(name + "protocol version " + std::to_string(b[pos + 4]) + ", this reader supports version " +
                         std::to_string(kProtocolVersion));
  if (b[pos + 5] != f.letter)
    return invalidArgument(name + "the preamble announces format '" + static_cast<char>(b[pos + 5]) + "', not '" +
                           f.letter + "' (" + f.name + ")");
  return Status::OK();
}

Status FramedCodec::checkSpecs(const SessionSpecs& specs) const {
  MLBRIDGE_RETURN_IF_ERROR(validateSpecs(specs.features, "feature"));
  MLBRIDGE_RETURN_IF_ERROR(validateSpecs(specs.advice, "advice"));
  for (const auto* list : {&specs.features, &specs.advice})
    for (const TensorSpec& s : *list)
      if (!utf8::isValid(s.name())) return invalidArgument("tensor name '" + s.name() + "' is not valid UTF-8");
  return Status::OK();
}

Status FramedCodec::decodeToModelStream(Span<const uint8_t> bytes, std::vector<DecodedMessage>& out) const {
  return decodeStream(bytes, true, out);
}

Status FramedCodec::decodeToCompilerStream(Span<const uint8_t> bytes, const SessionSpecs&,
                                           std::vector<DecodedMessage>& out) const {
  return decodeStream(bytes, false, out);
}

Status FramedCodec::decodeStream(Span<const uint8_t> bytes, bool toModel, std::vector<DecodedMessage>& out) const {
  return forEachFrame(bytes, toModel, frame_, [this, toModel, &out](Span<const uint8_t> payload, size_t) {
    DecodedMessage m;
    MLBRIDGE_RETURN_IF_ERROR(decodeMessage_(payload, toModel, m));
    out.push_back(std::move(m));
    return Status::OK();
  });
}

}  // namespace wire
}  // namespace mlbridge
