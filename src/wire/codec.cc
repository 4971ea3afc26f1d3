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
