// The one JSON tokenizer (docs/protocol.md, "json payload"): a pull lexer
// over a byte range that validates as it goes (RFC 8259 plus bare NaN,
// Infinity, -Infinity) and hands out strings as raw views, decoded only when
// asked. The hot reply decoder (wire/json_codec.cc) reads numbers straight
// into output buffers with it; the DOM reader (json.cc) builds Values with it.
#ifndef MLBRIDGE_SRC_JSON_LEXER_H
#define MLBRIDGE_SRC_JSON_LEXER_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "json/utf8.h"
#include "mlbridge/status.h"

namespace mlbridge {
namespace json {
// Unnamed: internal linkage in each includer, so the compiler inlines the
// lexer into the reply decoder's loops as freely as when it was private to
// json_codec.cc (as inline functions with external linkage, eat, expect,
// number and string stayed out-of-line calls per element).
namespace {

// Nesting bound of skipped or parsed values: no stack overflow on hostile input.
constexpr int kMaxDepth = 256;

inline int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

inline uint32_t hex4(const char* p) {
  uint32_t x = 0;
  for (int i = 0; i < 4; ++i) x = x * 16 + static_cast<uint32_t>(hexValue(p[i]));
  return x;
}

// A string token as it appears between its quotes (validated, not decoded).
struct RawString {
  std::string_view raw;
  bool escaped = false;
};

// Decodes a validated raw string, handing UTF-8 chunks to sink(ptr, len).
template <class Sink>
void unescape(std::string_view raw, Sink&& sink) {
  const char* p = raw.data();
  const char* e = p + raw.size();
  const char* run = p;
  while (p < e) {
    if (*p != '\\') {
      ++p;
      continue;
    }
    sink(run, static_cast<size_t>(p - run));
    char c = p[1];
    p += 2;
    char b[4];
    size_t n = 1;
    switch (c) {
      case 'b': b[0] = '\b'; break;
      case 'f': b[0] = '\f'; break;
      case 'n': b[0] = '\n'; break;
      case 'r': b[0] = '\r'; break;
      case 't': b[0] = '\t'; break;
      case 'u': {
        uint32_t cp = hex4(p);
        p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // validated: a low surrogate follows
          cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(p + 2) - 0xDC00);
          p += 6;
        }
        if (cp < 0x80) {
          b[0] = static_cast<char>(cp);
        } else if (cp < 0x800) {
          b[0] = static_cast<char>(0xC0 | (cp >> 6));
          b[1] = static_cast<char>(0x80 | (cp & 0x3F));
          n = 2;
        } else if (cp < 0x10000) {
          b[0] = static_cast<char>(0xE0 | (cp >> 12));
          b[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          b[2] = static_cast<char>(0x80 | (cp & 0x3F));
          n = 3;
        } else {
          b[0] = static_cast<char>(0xF0 | (cp >> 18));
          b[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
          b[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          b[3] = static_cast<char>(0x80 | (cp & 0x3F));
          n = 4;
        }
        break;
      }
      default: b[0] = c; break;  // '"' '\\' '/'
    }
    sink(b, n);
    run = p;
  }
  sink(run, static_cast<size_t>(p - run));
}

inline bool stringEquals(const RawString& s, std::string_view expected) {
  if (!s.escaped) return s.raw == expected;
  size_t pos = 0;
  bool same = true;
  unescape(s.raw, [&](const char* p, size_t n) {
    if (!same) return;
    if (n > expected.size() - pos || std::memcmp(p, expected.data() + pos, n) != 0) same = false;
    pos += n;
  });
  return same && pos == expected.size();
}

inline std::string decoded(const RawString& s) {
  if (!s.escaped) return std::string(s.raw);
  std::string out;
  unescape(s.raw, [&](const char* p, size_t n) { out.append(p, n); });
  return out;
}

inline void assignDecoded(const RawString& s, std::string& out) {
  if (!s.escaped) {
    out.assign(s.raw.data(), s.raw.size());  // reuses the element's capacity
    return;
  }
  out.clear();
  unescape(s.raw, [&](const char* p, size_t n) { out.append(p, n); });
}

// Short strings (dtype names, "NaN") decoded into a stack buffer; false if too long.
template <size_t N>
bool decodeSmall(const RawString& s, char (&buf)[N], std::string_view* out) {
  size_t len = 0;
  bool fits = true;
  unescape(s.raw, [&](const char* p, size_t n) {
    if (!fits || n > N - len) {
      fits = false;
      return;
    }
    std::memcpy(buf + len, p, n);
    len += n;
  });
  *out = std::string_view(buf, len);
  return fits;
}

class Lexer {
 public:
  // Errors read "<errorPrefix>N: ...", e.g. "invalid JSON at byte 12: ...".
  Lexer(const char* b, const char* e, const char* errorPrefix) : begin_(b), p_(b), end_(e), what_(errorPrefix) {}

  void ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  char peek() {
    ws();
    return p_ < end_ ? *p_ : '\0';
  }
  bool eat(char c) {
    ws();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  Status expect(char c) {
    if (eat(c)) return Status::OK();
    return error(p_ == end_ ? std::string("unexpected end of the message") : std::string("expected '") + c + "'");
  }
  bool atEnd() {
    ws();
    return p_ == end_;
  }

  Status string(RawString* out) {
    ws();
    if (p_ == end_ || *p_ != '"') return error("expected a string");
    const char* start = ++p_;
    bool escaped = false;
    for (;;) {
      while (p_ < end_) {
        unsigned char c = static_cast<unsigned char>(*p_);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++p_;
      }
      if (p_ == end_) return error("unterminated string");
      unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') break;
      if (c < 0x20) return error("control character in a string");
      if (c >= 0x80) {
        size_t n = utf8::sequenceLength(reinterpret_cast<const unsigned char*>(p_),
                                      reinterpret_cast<const unsigned char*>(end_));
        if (!n) return error("invalid UTF-8 in a string");
        p_ += n;
        continue;
      }
      escaped = true;
      if (end_ - p_ < 2) return error("unterminated string");
      char e = p_[1];
      if (e == 'u') {
        if (end_ - p_ < 6 || !validHex4(p_ + 2)) return error("invalid \\u escape");
        uint32_t cp = hex4(p_ + 2);
        p_ += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return error("unpaired surrogate in a \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u' || !validHex4(p_ + 2))
            return error("unpaired surrogate in a \\u escape");
          uint32_t lo = hex4(p_ + 2);
          if (lo < 0xDC00 || lo > 0xDFFF) return error("unpaired surrogate in a \\u escape");
          p_ += 6;
        }
      } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
        p_ += 2;
      } else {
        return error("invalid escape in a string");
      }
    }
    out->raw = std::string_view(start, static_cast<size_t>(p_ - start));
    out->escaped = escaped;
    ++p_;  // closing quote
    return Status::OK();
  }

  // A number token, or a bare NaN / Infinity / -Infinity.
  Status number(std::string_view* tok) {
    ws();
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ < end_ && (*p_ == 'N' || *p_ == 'I')) {  // rare: test the words only here
      if ((p_ == start && word("NaN")) || word("Infinity")) {
        *tok = std::string_view(start, static_cast<size_t>(p_ - start));
        return Status::OK();
      }
      p_ = start;
      return error("expected a number");
    }
    if (p_ < end_ && *p_ == '0') {
      ++p_;
    } else if (digit()) {
      while (digit()) ++p_;
    } else {
      p_ = start;
      return error("expected a number");
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (!digit()) return error("invalid number");
      while (digit()) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digit()) return error("invalid number");
      while (digit()) ++p_;
    }
    *tok = std::string_view(start, static_cast<size_t>(p_ - start));
    return Status::OK();
  }

  bool word(const char* w) {
    size_t n = std::strlen(w);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, w, n) != 0) return false;
    p_ += n;
    return true;
  }

  Status skipValue(int depth) {
    if (depth > kMaxDepth) return error("nesting too deep");
    char c = peek();
    if (c == '"') {
      RawString s;
      return string(&s);
    }
    if (c == '{' || c == '[') {
      ++p_;
      const char close = c == '{' ? '}' : ']';
      if (eat(close)) return Status::OK();
      for (;;) {
        if (c == '{') {
          RawString key;
          MLBRIDGE_RETURN_IF_ERROR(string(&key));
          MLBRIDGE_RETURN_IF_ERROR(expect(':'));
        }
        MLBRIDGE_RETURN_IF_ERROR(skipValue(depth + 1));
        if (eat(',')) continue;
        return expect(close);
      }
    }
    if (word("true") || word("false") || word("null")) return Status::OK();
    std::string_view tok;
    return number(&tok);
  }

  Status error(const std::string& what) const {
    return dataLoss(what_ + std::to_string(p_ - begin_) + ": " + what);
  }

 private:
  bool digit() const { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; }
  static bool validHex4(const char* p) {
    for (int i = 0; i < 4; ++i)
      if (hexValue(p[i]) < 0) return false;
    return true;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  const char* what_;
};

}  // namespace
}  // namespace json
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_JSON_LEXER_H
