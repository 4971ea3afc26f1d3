#include "wire/codec.h"

#include <cstring>

namespace mlbridge {

const char* wireFormatName(WireFormat f) {
  switch (f) {
    case WireFormat::kBitstream: return "bitstream";
    case WireFormat::kJson: return "json";
    case WireFormat::kProtobuf: return "protobuf";
  }
  return "unknown";
}

bool parseWireFormat(std::string_view name, WireFormat* out) {
  for (WireFormat f : {WireFormat::kBitstream, WireFormat::kJson, WireFormat::kProtobuf}) {
    if (name == wireFormatName(f)) {
      *out = f;
      return true;
    }
  }
  return false;
}

namespace wire {

std::unique_ptr<Codec> makeCodec(WireFormat format) {
  switch (format) {
    case WireFormat::kBitstream: return makeBitstreamCodec();
    case WireFormat::kJson: return makeJsonCodec();
    case WireFormat::kProtobuf: return makeProtobufCodec();
  }
  return nullptr;
}

namespace {

std::string idMismatch(int64_t got, int64_t expected) {
  return "reply id " + std::to_string(got) +
         (expected < 0 ? std::string(" does not answer the header (id -1)")
                       : " does not answer observation " + std::to_string(expected));
}

}  // namespace

Status checkReply(const ReplySummary& r, int64_t expectedId, size_t expectedTensors) {
  if (!r.sawReply) return dataLoss("the model's message is not a reply");
  if (!r.hasId) return dataLoss("reply has no \"id\"");
  if (r.hasError) {
    std::string text(r.error);
    // id -1 mid-session: the model gave up on the whole session (protocol.md).
    if (r.id == -1 && expectedId != -1) return unavailable("the model ended the session: " + text);
    if (r.id != expectedId) return dataLoss(idMismatch(r.id, expectedId) + " (model error: " + text + ")");
    return Status(StatusCode::kAborted, "model error: " + text);
  }
  if (r.id != expectedId) return dataLoss(idMismatch(r.id, expectedId));
  if (!r.hasTensors && expectedTensors != 0) return dataLoss("reply has no \"tensors\"");
  if (r.tensors != expectedTensors)
    return dataLoss("reply has " + std::to_string(r.tensors) + " tensors, expected " +
                    std::to_string(expectedTensors));
  return Status::OK();
}

Status checkTensorAgainstSpec(const TensorSpec& expected, std::string_view name, DType type,
                              Span<const int64_t> shape, const char* what) {
  if (name != expected.name())
    return invalidArgument(std::string(what) + " '" + std::string(name) + "' where '" + expected.name() +
                           "' was expected");
  if (type != expected.type())
    return invalidArgument(std::string(what) + " '" + expected.name() + "' has type " + dtypeName(type) +
                           ", expected " + dtypeName(expected.type()));
  bool same = shape.size() == expected.shape().size();
  for (size_t i = 0; same && i < shape.size(); ++i) same = shape[i] == expected.shape()[i];
  if (!same)
    return invalidArgument(std::string(what) + " '" + expected.name() + "' has shape " +
                           shapeToString(std::vector<int64_t>(shape.begin(), shape.end())) + ", expected " +
                           shapeToString(expected.shape()));
  return Status::OK();
}

}  // namespace wire
}  // namespace mlbridge
