// A structure-aware mutator for protobuf-encoded ONNX models. libFuzzer's
// byte mutations rarely produce the numbers that break shape arithmetic,
// and a model keeps them as varints (attributes such as hidden_size or
// axis, dims, int64_data) or as little-endian words in raw_data (Slice's
// steps, Reshape's shape). Half of the mutations are libFuzzer's; a quarter
// parse the protobuf, set one number to an extreme value and re-serialize
// with the lengths fixed up; a quarter overwrite an 8-byte word. The
// dictionary (onnx.dict) supplies operator and attribute names.
#ifndef MLBRIDGE_FUZZ_ONNX_MUTATOR_H
#define MLBRIDGE_FUZZ_ONNX_MUTATOR_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

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

// A protobuf message parsed just enough to edit numbers and re-serialize
// with correct lengths: length-delimited fields that parse as messages are
// kept as children, anything else as bytes.
struct PbField {
  uint64_t tag = 0;  // (field << 3) | wire type
  uint64_t number = 0;                 // varint, fixed64, fixed32 value
  std::string bytes;                   // length-delimited, not a message
  std::vector<PbField> children;       // length-delimited, a message
  bool message = false;
};

inline bool pbVarint(const uint8_t*& p, const uint8_t* end, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    uint8_t b = *p++;
    *v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

inline bool pbParse(const uint8_t* p, const uint8_t* end, int depth, std::vector<PbField>* out) {
  while (p < end) {
    PbField f;
    if (!pbVarint(p, end, &f.tag) || (f.tag >> 3) == 0) return false;
    switch (f.tag & 7) {
      case 0:
        if (!pbVarint(p, end, &f.number)) return false;
        break;
      case 1:
      case 5: {
        size_t n = (f.tag & 7) == 1 ? 8 : 4;
        if (size_t(end - p) < n) return false;
        for (size_t k = 0; k < n; ++k) f.number |= uint64_t(p[k]) << (8 * k);
        p += n;
        break;
      }
      case 2: {
        uint64_t len;
        if (!pbVarint(p, end, &len) || len > uint64_t(end - p)) return false;
        f.message = depth < 12 && len > 0 && pbParse(p, p + len, depth + 1, &f.children);
        if (!f.message) {
          f.children.clear();
          f.bytes.assign(reinterpret_cast<const char*>(p), len);
        }
        p += len;
        break;
      }
      default: return false;
    }
    out->push_back(std::move(f));
  }
  return true;
}

inline void pbPutVarint(std::string& s, uint64_t v) {
  while (v >= 0x80) {
    s += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  s += static_cast<char>(v);
}

inline void pbWrite(const std::vector<PbField>& fields, std::string& s) {
  for (const PbField& f : fields) {
    pbPutVarint(s, f.tag);
    switch (f.tag & 7) {
      case 0: pbPutVarint(s, f.number); break;
      case 1:
      case 5:
        for (size_t k = 0; k < ((f.tag & 7) == 1 ? 8u : 4u); ++k) s += static_cast<char>(f.number >> (8 * k));
        break;
      default:
        if (f.message) {
          std::string inner;
          pbWrite(f.children, inner);
          pbPutVarint(s, inner.size());
          s += inner;
        } else {
          pbPutVarint(s, f.bytes.size());
          s += f.bytes;
        }
    }
  }
}

inline void pbNumbers(std::vector<PbField>& fields, std::vector<PbField*>* out) {
  for (PbField& f : fields) {
    if (f.message) pbNumbers(f.children, out);
    else if ((f.tag & 7) != 2) out->push_back(&f);
  }
}

// Sets one number of the message (an attribute's int, a dimension, a
// data_type, an int64_data entry...) to an extreme value, lengths fixed up.
inline size_t mutateStructure(uint8_t* data, size_t size, size_t maxSize, std::minstd_rand& rng) {
  std::vector<PbField> fields;
  if (!pbParse(data, data + size, 0, &fields)) return 0;
  std::vector<PbField*> numbers;
  pbNumbers(fields, &numbers);
  if (numbers.empty()) return 0;
  PbField* f = numbers[rng() % numbers.size()];
  const int64_t v = extremeValue(rng);
  f->number = (f->tag & 7) == 5 ? static_cast<uint32_t>(v) : static_cast<uint64_t>(v);
  std::string out;
  pbWrite(fields, out);
  if (out.size() > maxSize) return 0;
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

inline size_t mutateOnnx(uint8_t* data, size_t size, size_t maxSize, unsigned seed) {
  std::minstd_rand rng(seed);
  const unsigned pick = rng() % 4;
  if (size < 8 || pick < 2) return LLVMFuzzerMutate(data, size, maxSize);
  if (pick == 2) {
    size_t n = mutateStructure(data, size, maxSize, rng);
    return n ? n : LLVMFuzzerMutate(data, size, maxSize);
  }
  // An 8-byte little-endian word (int64 raw_data, a double).
  const int64_t v = extremeValue(rng);
  size_t at = rng() % (size - 7);
  if (rng() % 2 == 0) at &= ~size_t(7);
  for (int k = 0; k < 8; ++k) data[at + k] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * k));
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
