// Fuzz target: the model side's decoder of one wire format (a recorded
// compiler -> model stream: header, contexts, observations, end).
// Built once per format with MLBRIDGE_FUZZ_FORMAT = kBitstream, kJson or kProtobuf.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "wire/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlbridge;
  static const std::unique_ptr<wire::Codec> codec = wire::makeCodec(WireFormat::MLBRIDGE_FUZZ_FORMAT);
  std::vector<wire::DecodedMessage> messages;
  Status s = codec->decodeToModelStream(Span<const uint8_t>(data, size), messages);
  // A decoded header must hold specs that validate (the decoder's contract).
  if (s.ok())
    for (const wire::DecodedMessage& m : messages)
      if (m.kind == wire::DecodedMessage::Kind::kHeader)
        for (const TensorSpec& t : m.specs.features)
          if (!t.validate().ok()) __builtin_trap();
  return 0;
}
