// Fuzz target: reading a training log as mlbridge-replay does (a bitstream
// compiler -> model transcript written by stock LLVM or recorded by
// mlbridge, with outcome records, then the recorded replies decoded with
// the transcript header's advice specs).
// Input: u32 little-endian length L, L bytes of transcript, then replies.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "wire/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mlbridge;
  if (size < 4) return 0;
  size_t logSize = size_t(data[0]) | size_t(data[1]) << 8 | size_t(data[2]) << 16 | size_t(data[3]) << 24;
  if (logSize > size - 4) logSize = size - 4;
  static const std::unique_ptr<wire::Codec> bitstream = wire::makeBitstreamCodec();
  std::vector<wire::DecodedMessage> log, replies;
  if (!bitstream->decodeToModelStream(Span<const uint8_t>(data + 4, logSize), log).ok()) return 0;
  if (log.empty() || log[0].kind != wire::DecodedMessage::Kind::kHeader) return 0;
  // Every observation holds exactly the bytes its header's specs announce.
  const wire::SessionSpecs* specs = nullptr;
  for (const wire::DecodedMessage& m : log) {
    if (m.kind == wire::DecodedMessage::Kind::kHeader) specs = &m.specs;
    if (m.kind != wire::DecodedMessage::Kind::kObservation) continue;
    if (m.tensors.size() != specs->features.size()) __builtin_trap();
    for (size_t i = 0; i < m.tensors.size(); ++i)
      if (m.tensors[i].bytes.size() != specs->features[i].byteSize()) __builtin_trap();
  }
  (void)bitstream->decodeToCompilerStream(Span<const uint8_t>(data + 4 + logSize, size - 4 - logSize), log[0].specs,
                                          replies);
  return 0;
}
