// The three serialization formats a runner can speak (docs/protocol.md).
#ifndef MLBRIDGE_WIRE_FORMAT_H
#define MLBRIDGE_WIRE_FORMAT_H

#include <string_view>

namespace mlbridge {

enum class WireFormat {
  kBitstream,  // LLVM MLGO interactive mode, byte for byte
  kJson,       // framed JSON with explicit dtypes
  kProtobuf,   // framed mlbridge.v1.Message
};

const char* wireFormatName(WireFormat f);  // "bitstream", "json", "protobuf"
// false if `name` is not one of the names above.
bool parseWireFormat(std::string_view name, WireFormat* out);

// Protocol version carried by framed preambles and headers.
constexpr int kProtocolVersion = 1;

}  // namespace mlbridge

#endif  // MLBRIDGE_WIRE_FORMAT_H
