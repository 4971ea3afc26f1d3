// A structure-light mutator for protobuf-encoded ONNX models. libFuzzer's
// byte mutations rarely produce the numbers that break shape arithmetic,
// and a model keeps its shape-like operands (Slice's starts/ends/steps,
// Reshape's shape, ...) as little-endian int64 words in raw_data or as
// varints in attributes. Half of the mutations overwrite such a word or a
// same-length varint with an extreme value; the dictionary (onnx.dict)
// supplies operator and attribute names.
#ifndef MLBRIDGE_FUZZ_ONNX_MUTATOR_H
#define MLBRIDGE_FUZZ_ONNX_MUTATOR_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>

#ifdef MLBRIDGE_LIBFUZZER
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

namespace mlbridge {
namespace fuzz {

inline int64_t extremeValue(std::minstd_rand& rng) {
  static const int64_t kValues[] = {INT64_MAX,     INT64_MIN,      INT64_MAX - 1, INT64_MIN + 1, -1,
                                    0,             1,              2,             INT32_MAX,     INT32_MIN,
                                    int64_t(1) << 28, int64_t(1) << 31, int64_t(1) << 32, int64_t(1) << 62,
                                    -(int64_t(1) << 62), 1000000007};
  return kValues[rng() % (sizeof(kValues) / sizeof(kValues[0]))];
}

inline size_t mutateOnnx(uint8_t* data, size_t size, size_t maxSize, unsigned seed) {
  std::minstd_rand rng(seed);
  if (size < 8 || rng() % 2 == 0) return LLVMFuzzerMutate(data, size, maxSize);
  const int64_t v = extremeValue(rng);
  if (rng() % 2 == 0) {
    // An 8-byte little-endian word (int64 raw_data, a double).
    size_t at = rng() % (size - 7);
    if (rng() % 2 == 0) at &= ~size_t(7);
    for (int k = 0; k < 8; ++k) data[at + k] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * k));
    return size;
  }
  // A varint at a random place, replaced by `v` truncated to the same number
  // of bytes (the enclosing lengths stay valid).
  size_t at = rng() % size, end = at;
  while (end < size && end - at < 10 && (data[end] & 0x80)) ++end;
  if (end >= size) return LLVMFuzzerMutate(data, size, maxSize);
  uint64_t u = static_cast<uint64_t>(v);
  for (size_t k = at; k <= end; ++k, u >>= 7) data[k] = static_cast<uint8_t>((u & 0x7f) | (k < end ? 0x80 : 0));
  return size;
}

}  // namespace fuzz
}  // namespace mlbridge

#define MLBRIDGE_ONNX_CUSTOM_MUTATOR                                                                 \
  extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned seed) { \
    return mlbridge::fuzz::mutateOnnx(data, size, maxSize, seed);                                   \
  }
#else
#define MLBRIDGE_ONNX_CUSTOM_MUTATOR
#endif

#endif  // MLBRIDGE_FUZZ_ONNX_MUTATOR_H
