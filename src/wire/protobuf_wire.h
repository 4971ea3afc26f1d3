// Protocol buffers wire-format primitives (varints, tags, field skipping) for
// the hand-written mlbridge.v1 codec: the core builds without libprotobuf.
// https://protobuf.dev/programming-guides/encoding/
#ifndef MLBRIDGE_SRC_WIRE_PROTOBUF_WIRE_H
#define MLBRIDGE_SRC_WIRE_PROTOBUF_WIRE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "mlbridge/status.h"

namespace mlbridge {
namespace wire {
namespace pb {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

constexpr uint32_t kMaxFieldNumber = (1u << 29) - 1;

constexpr uint32_t makeTag(uint32_t field, WireType type) { return field << 3 | type; }

inline size_t varintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Writes v at p (up to 10 bytes); returns the end.
inline char* writeVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

inline void appendVarint(std::string& out, uint64_t v) {
  char buf[10];
  out.append(buf, static_cast<size_t>(writeVarint(buf, v) - buf));
}

// Sizes of whole fields (tag + value). Our field numbers are < 16: one-byte tags.
// proto3 omits scalar fields equal to their default (0, empty).
inline size_t varintFieldSize(uint64_t v) { return v == 0 ? 0 : 1 + varintSize(v); }
// A length-delimited field that is present (sub-messages, repeated elements).
inline size_t lengthDelimitedSize(size_t len) { return 1 + varintSize(len) + len; }
// A string/bytes scalar: omitted when empty.
inline size_t bytesFieldSize(size_t len) { return len == 0 ? 0 : lengthDelimitedSize(len); }

inline void appendVarintField(std::string& out, uint32_t field, uint64_t v) {
  if (v == 0) return;
  out += static_cast<char>(makeTag(field, kVarint));
  appendVarint(out, v);
}
// Tag and length of a length-delimited field; the caller appends the bytes.
inline void appendLengthPrefix(std::string& out, uint32_t field, size_t len) {
  out += static_cast<char>(makeTag(field, kLengthDelimited));
  appendVarint(out, len);
}
inline void appendBytesField(std::string& out, uint32_t field, const void* p, size_t len) {
  if (len == 0) return;
  appendLengthPrefix(out, field, len);
  out.append(static_cast<const char*>(p), len);
}


// Reads one message's fields from [p, end). Errors are kDataLoss naming the
// byte offset from `base` (the start of the payload) and what was read.
class Reader {
 public:
  Reader(const uint8_t* base, const uint8_t* p, const uint8_t* end) : base_(base), p_(p), end_(end) {}

  bool done() const { return p_ == end_; }
  size_t offset() const { return static_cast<size_t>(p_ - base_); }

  // Out-parameters are always assigned, so callers need no initializers.
  Status readVarint(uint64_t* out) {
    *out = 0;
    uint64_t v = 0;
    for (int i = 0; i < 10; ++i) {
      if (p_ == end_) return error("truncated varint");
      uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7F) << (7 * i);  // bits past 64 are dropped, as protobuf does
      if (!(b & 0x80)) {
        *out = v;
        return Status::OK();
      }
    }
    return error("varint longer than 10 bytes");
  }

  Status readTag(uint32_t* field, WireType* type) {
    *field = 0;
    *type = kVarint;
    uint64_t tag;
    MLBRIDGE_RETURN_IF_ERROR(readVarint(&tag));
    if (tag > 0xFFFFFFFFu || (tag >> 3) == 0) return error("invalid field tag");
    *field = static_cast<uint32_t>(tag >> 3);
    uint32_t t = static_cast<uint32_t>(tag & 7);
    if (t > kFixed32) return error("invalid wire type");
    *type = static_cast<WireType>(t);
    return Status::OK();
  }

  // A length-delimited value; [*p, *p + *n) lies inside the buffer.
  Status readLengthDelimited(const uint8_t** p, size_t* n) {
    *p = p_;
    *n = 0;
    uint64_t len;
    MLBRIDGE_RETURN_IF_ERROR(readVarint(&len));
    if (len > static_cast<uint64_t>(end_ - p_)) return error("length-delimited field runs past the end");
    *p = p_;
    *n = static_cast<size_t>(len);
    p_ += len;
    return Status::OK();
  }

  // Skips the value of a field already read with readTag (unknown fields).
  Status skip(uint32_t field, WireType type, int depth = 0) {
    switch (type) {
      case kVarint: {
        uint64_t v;
        return readVarint(&v);
      }
      case kFixed64: return advance(8);
      case kFixed32: return advance(4);
      case kLengthDelimited: {
        const uint8_t* p;
        size_t n;
        return readLengthDelimited(&p, &n);
      }
      case kStartGroup: {
        if (depth >= kMaxGroupDepth) return error("groups nested too deep");
        for (;;) {
          if (done()) return error("unterminated group");
          uint32_t f;
          WireType t;
          MLBRIDGE_RETURN_IF_ERROR(readTag(&f, &t));
          if (t == kEndGroup) {
            if (f != field) return error("mismatched end of group");
            return Status::OK();
          }
          MLBRIDGE_RETURN_IF_ERROR(skip(f, t, depth + 1));
        }
      }
      case kEndGroup: return error("end of group without a start");
    }
    return error("invalid wire type");
  }

  Status error(const char* what) const {
    return dataLoss(std::string("malformed protobuf at byte ") + std::to_string(offset()) + ": " + what);
  }

 private:
  static constexpr int kMaxGroupDepth = 64;

  Status advance(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return error("truncated fixed-size field");
    p_ += n;
    return Status::OK();
  }

  const uint8_t* base_;
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace pb
}  // namespace wire
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_WIRE_PROTOBUF_WIRE_H
