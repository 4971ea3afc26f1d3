// Fuzz target: the compiler side's decoders of one wire format: the hot
// path (decodeReply straight into the runner's output buffers, framed
// formats) and the cold path (a recorded model -> compiler stream). The
// first byte picks the advice specs (fuzz_specs.h); the rest is the stream.
// Built once per format with MLBRIDGE_FUZZ_FORMAT = kBitstream, kJson or kProtobuf.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_specs.h"
#include "wire/codec.h"
#include "wire/framing.h"

namespace {

using namespace mlbridge;

// Output buffers as a runner holds them: bytes for numbers, std::string
// arrays for strings.
struct Outputs {
  std::vector<TensorSpec> specs;
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<std::vector<std::string>> strings;
  std::vector<MutableTensorRef> refs;
  explicit Outputs(std::vector<TensorSpec> s) : specs(std::move(s)) {
    bytes.resize(specs.size());
    strings.resize(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      void* p;
      if (specs[i].type() == DType::kString) {
        strings[i].resize(specs[i].elementCount());
        p = strings[i].data();
      } else {
        bytes[i].resize(specs[i].byteSize() + 1);
        p = bytes[i].data();
      }
      refs.push_back(MutableTensorRef{&specs[i], p});
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const std::unique_ptr<wire::Codec> codec = wire::makeCodec(WireFormat::MLBRIDGE_FUZZ_FORMAT);
  const bool framed = codec->framed();
  wire::SessionSpecs specs;
  specs.advice = fuzz::adviceSpecs(data[0], framed);
  const Span<const uint8_t> stream(data + 1, size - 1);

  std::vector<wire::DecodedMessage> messages;
  (void)codec->decodeToCompilerStream(stream, specs, messages);

  Outputs out(specs.advice);
  if (!framed) {
    (void)codec->decodeReply(stream, 0, Span<const MutableTensorRef>(out.refs.data(), out.refs.size()));
    return 0;
  }
  // Framed: every frame through the hot path, the first as the header's
  // acknowledgment (id -1, no outputs), then replies 0, 1, ...
  int64_t id = -1;
  (void)wire::forEachFrame(stream, false, wire::FrameFormat{'F', "fuzz"}, [&](Span<const uint8_t> payload, size_t) {
    Span<const MutableTensorRef> refs(out.refs.data(), id < 0 ? 0 : out.refs.size());
    (void)codec->decodeReply(payload, id, refs);
    ++id;
    return Status::OK();
  });
  return 0;
}
