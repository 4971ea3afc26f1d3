// Helpers shared by the codec tests: owned tensors of every dtype with
// deterministic contents, frame splitting, and a heap allocation counter
// (the replacement operator new lives in json_codec_test.cc).
#ifndef MLBRIDGE_TESTS_CODEC_TESTING_H
#define MLBRIDGE_TESTS_CODEC_TESTING_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "mlbridge/dtype.h"
#include "mlbridge/span.h"
#include "mlbridge/tensor_ref.h"
#include "mlbridge/tensor_spec.h"
#include "wire/codec.h"

namespace mlbridge {
namespace testing {

// Heap allocations made by this process so far (all threads).
size_t heapAllocations();

// A tensor that owns its storage.
struct OwnedTensor {
  TensorSpec spec;
  std::vector<unsigned char> bytes;  // numeric
  std::vector<std::string> strings;  // kString

  TensorRef ref() const {
    return TensorRef{&spec, spec.type() == DType::kString ? static_cast<const void*>(strings.data())
                                                          : static_cast<const void*>(bytes.data())};
  }
  MutableTensorRef mutableRef() {
    return MutableTensorRef{&spec, spec.type() == DType::kString ? static_cast<void*>(strings.data())
                                                                 : static_cast<void*>(bytes.data())};
  }
  template <class T>
  T at(size_t k) const {
    T v;
    std::memcpy(&v, bytes.data() + k * sizeof(T), sizeof(T));
    return v;
  }
  template <class T>
  void set(size_t k, T v) {
    std::memcpy(bytes.data() + k * sizeof(T), &v, sizeof(T));
  }
};

// Zero-filled storage for `spec`.
inline OwnedTensor emptyTensor(const TensorSpec& spec) {
  OwnedTensor t;
  t.spec = spec;
  if (spec.type() == DType::kString)
    t.strings.assign(spec.elementCount(), std::string());
  else
    t.bytes.assign(spec.byteSize(), 0);
  return t;
}

// Deterministic values that exercise each dtype's edges: extremes, -0.0,
// infinities, NaN (the canonical quiet NaN, so bits survive json), subnormals.
inline OwnedTensor sampleTensor(const std::string& name, DType type, std::vector<int64_t> shape,
                                uint32_t seed = 1) {
  OwnedTensor t = emptyTensor(TensorSpec(name, type, std::move(shape)));
  const size_t n = t.spec.elementCount();
  uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (size_t k = 0; k < n; ++k) {
    uint64_t r = next();
    switch (type) {
      case DType::kFloat32: {
        static const float edge[] = {0.0f, -0.0f, 1.0f, -1.5f, 0.1f, std::numeric_limits<float>::max(),
                                     std::numeric_limits<float>::lowest(), std::numeric_limits<float>::denorm_min(),
                                     std::numeric_limits<float>::min(), std::numeric_limits<float>::infinity(),
                                     -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                                     123456789.0f, 1e-5f, 1e16f};
        constexpr size_t kEdges = sizeof(edge) / sizeof(edge[0]);
        float v;
        if (k < kEdges) {
          v = edge[k];
        } else {
          uint32_t bits = static_cast<uint32_t>(r);
          std::memcpy(&v, &bits, 4);
          if (std::isnan(v)) v = std::numeric_limits<float>::quiet_NaN();
        }
        t.set(k, v);
        break;
      }
      case DType::kFloat64: {
        static const double edge[] = {0.0, -0.0, 1.0, -1.5, 0.1, std::numeric_limits<double>::max(),
                                      std::numeric_limits<double>::lowest(), std::numeric_limits<double>::denorm_min(),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::quiet_NaN(), 1e22, 5e-324};
        constexpr size_t kEdges = sizeof(edge) / sizeof(edge[0]);
        double v;
        if (k < kEdges) {
          v = edge[k];
        } else {
          std::memcpy(&v, &r, 8);
          if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
        }
        t.set(k, v);
        break;
      }
      case DType::kInt8: t.set(k, static_cast<int8_t>(k == 0 ? INT8_MIN : k == 1 ? INT8_MAX : static_cast<int8_t>(r))); break;
      case DType::kUInt8: t.set(k, static_cast<uint8_t>(k == 0 ? 0 : k == 1 ? UINT8_MAX : static_cast<uint8_t>(r))); break;
      case DType::kInt16: t.set(k, static_cast<int16_t>(k == 0 ? INT16_MIN : k == 1 ? INT16_MAX : static_cast<int16_t>(r))); break;
      case DType::kUInt16: t.set(k, static_cast<uint16_t>(k == 0 ? 0 : k == 1 ? UINT16_MAX : static_cast<uint16_t>(r))); break;
      case DType::kInt32: t.set(k, static_cast<int32_t>(k == 0 ? INT32_MIN : k == 1 ? INT32_MAX : static_cast<int32_t>(r))); break;
      case DType::kUInt32: t.set(k, static_cast<uint32_t>(k == 0 ? 0 : k == 1 ? UINT32_MAX : static_cast<uint32_t>(r))); break;
      case DType::kInt64: t.set(k, static_cast<int64_t>(k == 0 ? INT64_MIN : k == 1 ? INT64_MAX : static_cast<int64_t>(r))); break;
      case DType::kUInt64: t.set(k, static_cast<uint64_t>(k == 0 ? 0 : k == 1 ? UINT64_MAX : r)); break;
      case DType::kBool: t.set(k, static_cast<uint8_t>(r & 1)); break;
      case DType::kString: {
        static const char* const edge[] = {"", "plain", "quote\" back\\ nl\n tab\t", "\x01\x1f ctl",
                                           "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80", "/"};
        t.strings[k] = k < 6 ? std::string(edge[k]) : "s" + std::to_string(r % 100000);
        break;
      }
      case DType::kInvalid: break;
    }
  }
  return t;
}

inline std::vector<TensorRef> refs(const std::vector<OwnedTensor>& ts) {
  std::vector<TensorRef> out;
  for (const OwnedTensor& t : ts) out.push_back(t.ref());
  return out;
}
inline std::vector<MutableTensorRef> mutableRefs(std::vector<OwnedTensor>& ts) {
  std::vector<MutableTensorRef> out;
  for (OwnedTensor& t : ts) out.push_back(t.mutableRef());
  return out;
}
inline std::vector<OwnedTensor> emptyLike(const std::vector<OwnedTensor>& ts) {
  std::vector<OwnedTensor> out;
  for (const OwnedTensor& t : ts) out.push_back(emptyTensor(t.spec));
  return out;
}

// Same contents; NaN equals NaN (numeric tensors compare bit for bit
// otherwise, except that any NaN matches any NaN).
inline bool sameValues(const TensorSpec& spec, const void* a, const void* b) {
  const size_t n = spec.elementCount();
  if (spec.type() == DType::kString) {
    for (size_t k = 0; k < n; ++k)
      if (static_cast<const std::string*>(a)[k] != static_cast<const std::string*>(b)[k]) return false;
    return true;
  }
  const size_t w = dtypeSize(spec.type());
  for (size_t k = 0; k < n; ++k) {
    const unsigned char* x = static_cast<const unsigned char*>(a) + k * w;
    const unsigned char* y = static_cast<const unsigned char*>(b) + k * w;
    if (std::memcmp(x, y, w) == 0) continue;
    if (spec.type() == DType::kFloat32) {
      float fx, fy;
      std::memcpy(&fx, x, 4);
      std::memcpy(&fy, y, 4);
      if (std::isnan(fx) && std::isnan(fy)) continue;
    } else if (spec.type() == DType::kFloat64) {
      double dx, dy;
      std::memcpy(&dx, x, 8);
      std::memcpy(&dy, y, 8);
      if (std::isnan(dx) && std::isnan(dy)) continue;
    }
    return false;
  }
  return true;
}

inline Span<const uint8_t> bytesOf(const std::string& s) {
  return Span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// Payloads of a framed stream (after an optional 8-byte preamble).
inline std::vector<std::string> framePayloads(const std::string& stream, bool preamble) {
  std::vector<std::string> out;
  size_t pos = preamble ? wire::kPreambleSize : 0;
  while (pos + 4 <= stream.size()) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(stream.data() + pos);
    size_t len = size_t(p[0]) | size_t(p[1]) << 8 | size_t(p[2]) << 16 | size_t(p[3]) << 24;
    out.push_back(stream.substr(pos + 4, len));
    pos += 4 + len;
  }
  return out;
}

// The payload of a single encoded frame (drops the length prefix).
inline std::string onlyPayload(const std::string& frame) { return frame.substr(4); }

}  // namespace testing
}  // namespace mlbridge

#endif  // MLBRIDGE_TESTS_CODEC_TESTING_H
