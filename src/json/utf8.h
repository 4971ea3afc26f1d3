// UTF-8 validation, shared by the JSON reader and both framed codecs.
#ifndef MLBRIDGE_SRC_JSON_UTF8_H
#define MLBRIDGE_SRC_JSON_UTF8_H

#include <cstddef>
#include <string>
#include <string_view>

namespace mlbridge {
namespace utf8 {

// Length of the valid UTF-8 sequence (2..4 bytes) starting at p with lead
// byte >= 0x80; 0 if invalid (overlong, surrogate, > U+10FFFF, truncated).
inline size_t sequenceLength(const unsigned char* p, const unsigned char* end) {
  unsigned char c = p[0];
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (static_cast<size_t>(end - p) < n) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if ((p[i] & 0xC0) != 0x80) return 0;
  return n;
}

// proto3 `string` fields and JSON text must be valid UTF-8.
inline bool isValid(std::string_view s) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char* e = p + s.size();
  while (p < e) {
    size_t n = *p < 0x80 ? 1 : sequenceLength(p, e);
    if (!n) return false;
    p += n;
  }
  return true;
}

// Text that only informs (context names, error messages) is never refused:
// invalid sequences become U+FFFD, as Python's errors="replace" does.
inline std::string_view repaired(std::string_view s, std::string& storage) {
  if (isValid(s)) return s;
  storage.clear();
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char* e = p + s.size();
  while (p < e) {
    size_t n = *p < 0x80 ? 1 : sequenceLength(p, e);
    if (n) {
      storage.append(reinterpret_cast<const char*>(p), n);
      p += n;
    } else {
      storage.append("\xef\xbf\xbd");
      ++p;
    }
  }
  return storage;
}

}  // namespace utf8
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_JSON_UTF8_H
