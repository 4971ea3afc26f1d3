// JSON DOM reader and canonical writers (docs/protocol.md, "json payload").
// The reader never throws and never recurses deeper than kMaxDepth; the
// writers allocate nothing beyond appending to `out`.
#include "json/json.h"

#include "json/lexer.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace mlbridge {
namespace json {

namespace {

enum class IntResult { kOk, kNotNumber, kNotIntegral, kOutOfRange };

// A JSON number token split into sign, mantissa digits and exponent:
// value = digits (with the '.' removed) * 10^(exp10 - fracDigits).
struct Decimal {
  bool negative = false;
  std::string_view mantissa;  // digits, possibly with one '.'
  int64_t fracDigits = 0;
  int64_t exp10 = 0;  // saturated far beyond any representable range
};

bool splitDecimal(std::string_view t, Decimal* d) {
  size_t i = 0;
  if (i < t.size() && t[i] == '-') {
    d->negative = true;
    ++i;
  }
  size_t start = i;
  bool seenDigit = false, inFrac = false;
  for (; i < t.size(); ++i) {
    char c = t[i];
    if (c >= '0' && c <= '9') {
      seenDigit = true;
      if (inFrac) ++d->fracDigits;
    } else if (c == '.' && !inFrac) {
      inFrac = true;
    } else {
      break;
    }
  }
  if (!seenDigit) return false;
  d->mantissa = t.substr(start, i - start);
  if (i == t.size()) return true;
  if (t[i] != 'e' && t[i] != 'E') return false;
  ++i;
  bool expNeg = false;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) expNeg = t[i++] == '-';
  if (i == t.size()) return false;
  for (; i < t.size(); ++i) {
    if (t[i] < '0' || t[i] > '9') return false;
    if (d->exp10 < 1000000) d->exp10 = d->exp10 * 10 + (t[i] - '0');
  }
  if (expNeg) d->exp10 = -d->exp10;
  return true;
}

// Exact value of a JSON number token as sign + 64-bit magnitude, accepting
// any form whose value is an integer ("12", "1.2e1", "1200e-2").
IntResult decimalToInteger(std::string_view t, bool* negative, uint64_t* magnitude) {
  Decimal d;
  if (!splitDecimal(t, &d)) return IntResult::kNotNumber;
  *negative = d.negative;
  int64_t exp10 = d.exp10 - d.fracDigits;
  const char* b = d.mantissa.data();
  const char* e = b + d.mantissa.size();
  while (b < e && (*b == '0' || *b == '.')) ++b;
  if (b == e) {
    *magnitude = 0;
    return IntResult::kOk;
  }
  while (e[-1] == '0' || e[-1] == '.') {  // stops at b's nonzero digit
    if (e[-1] == '0') ++exp10;
    --e;
  }
  if (exp10 < 0) return IntResult::kNotIntegral;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t m = 0;
  for (const char* p = b; p < e; ++p) {
    if (*p == '.') continue;
    unsigned digit = static_cast<unsigned>(*p - '0');
    if (m > (kMax - digit) / 10) return IntResult::kOutOfRange;
    m = m * 10 + digit;
  }
  for (int64_t k = 0; k < exp10; ++k) {
    if (m > kMax / 10) return IntResult::kOutOfRange;
    m *= 10;
  }
  *magnitude = m;
  return IntResult::kOk;
}

// True if the number token `t` has magnitude below 1, i.e. a from_chars range
// error was an underflow (rounds to zero), not an overflow.
bool magnitudeBelowOne(std::string_view t) {
  Decimal d;
  if (!splitDecimal(t, &d)) return false;
  // Power of ten of the first significant digit.
  size_t dot = d.mantissa.find('.');
  int64_t intDigits = static_cast<int64_t>(dot == std::string_view::npos ? d.mantissa.size() : dot);
  int64_t index = 0;  // among digits, '.' skipped
  for (char c : d.mantissa) {
    if (c == '.') continue;
    if (c != '0') return intDigits - 1 - index + d.exp10 < 0;
    ++index;
  }
  return true;  // zero
}

template <class T>
bool textToFloat(std::string_view t, T* out) {
  if (t == "NaN") {
    *out = std::numeric_limits<T>::quiet_NaN();
    return true;
  }
  if (t == "Infinity" || t == "-Infinity") {
    *out = t[0] == '-' ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    return true;
  }
  if (t.empty() || t[0] == '+') return false;
  T v;
  std::from_chars_result r = std::from_chars(t.data(), t.data() + t.size(), v, std::chars_format::general);
  if (r.ptr != t.data() + t.size()) return false;
  if (r.ec == std::errc::result_out_of_range) {
    if (!magnitudeBelowOne(t)) return false;  // overflow: not representable
    v = t[0] == '-' ? -T(0) : T(0);           // underflow rounds to zero, as IEEE does
  } else if (r.ec != std::errc()) {
    return false;
  }
  *out = v;
  return true;
}

// The shortest round-trip digits of a float32 that is exactly a decimal of
// at most 6 significant digits, m * 10^-k with k <= 6, in [1e-6, 2^24) (0.5,
// 0.25, 3.0, 1.75...): they are m's digits, without a general shortest-digits
// search. Why: float32 gives distinct values to all decimals of up to 6
// significant digits (FLT_DIG), so no shorter decimal rounds to v. The
// scaling by 10^k is exact in double (24 + 14 bits < 53). False for
// anything else, which then takes std::to_chars.
bool shortDecimalDigits(float v, char* digits, int* n, int* e) {
  static constexpr double kPow10[7] = {1, 10, 100, 1000, 10000, 100000, 1000000};
  const double a = std::fabs(static_cast<double>(v));
  if (!(a >= 1e-6 && a < 16777216.0)) return false;
  // m / 10^k = (m / 5^k) / 2^k is a float only with at most k <= 6 fractional bits.
  if (a * 64.0 != std::floor(a * 64.0)) return false;
  for (int k = 0; k <= 6; ++k) {
    const double s = a * kPow10[k];
    if (s != std::floor(s)) continue;
    uint64_t m = static_cast<uint64_t>(s);
    char rev[24];
    int len = 0;
    do {
      rev[len++] = static_cast<char>('0' + m % 10);
      m /= 10;
    } while (m);
    int zeros = 0;
    while (zeros < len - 1 && rev[zeros] == '0') ++zeros;
    if (len - zeros > 6) return false;
    *n = len - zeros;
    for (int i = 0; i < *n; ++i) digits[i] = rev[len - 1 - i];
    *e = len - 1 - k;
    return true;
  }
  return false;
}

// Python repr() layout of the shortest round-trip digits of v, written at
// `o` (room for kMaxFloatText bytes); returns the end. `shortcut`: float32
// exact short decimals skip the general search (shortDecimalDigits).
template <class T>
char* writeFloatImpl(char* o, T v, bool shortcut = true) {
  if (std::isnan(v)) {
    std::memcpy(o, "\"NaN\"", 5);
    return o + 5;
  }
  if (std::isinf(v)) {
    const char* t = v < 0 ? "\"-Infinity\"" : "\"Infinity\"";
    size_t n = std::strlen(t);
    std::memcpy(o, t, n);
    return o + n;
  }
  char digits[24];
  int n = 0;
  int e = 0;
  if (sizeof(T) == 4 && shortcut && shortDecimalDigits(static_cast<float>(v), digits, &n, &e)) {
    if (v < 0) *o++ = '-';
  } else {
    char sci[48];
    std::to_chars_result r = std::to_chars(sci, sci + sizeof sci, v, std::chars_format::scientific);
    // sci = [-]d[.ddd]e(+|-)dd[d]
    const char* p = sci;
    if (*p == '-') *o++ = *p++;
    while (p < r.ptr && *p != 'e') {
      if (*p != '.') digits[n++] = *p;
      ++p;
    }
    ++p;  // 'e'
    bool expNeg = *p == '-';
    ++p;  // sign
    for (; p < r.ptr; ++p) e = e * 10 + (*p - '0');
    if (expNeg) e = -e;
  }

  if (e >= 16 || e < -4) {
    *o++ = digits[0];
    if (n > 1) {
      *o++ = '.';
      std::memcpy(o, digits + 1, static_cast<size_t>(n - 1));
      o += n - 1;
    }
    *o++ = 'e';
    *o++ = e < 0 ? '-' : '+';
    int a = e < 0 ? -e : e;
    if (a >= 100) *o++ = static_cast<char>('0' + a / 100);
    *o++ = static_cast<char>('0' + (a / 10) % 10);
    *o++ = static_cast<char>('0' + a % 10);
  } else if (e >= 0) {
    int intDigits = e + 1;
    if (n <= intDigits) {
      std::memcpy(o, digits, static_cast<size_t>(n));
      o += n;
      for (int k = n; k < intDigits; ++k) *o++ = '0';
      *o++ = '.';
      *o++ = '0';
    } else {
      std::memcpy(o, digits, static_cast<size_t>(intDigits));
      o += intDigits;
      *o++ = '.';
      std::memcpy(o, digits + intDigits, static_cast<size_t>(n - intDigits));
      o += n - intDigits;
    }
  } else {
    *o++ = '0';
    *o++ = '.';
    for (int k = -1; k > e; --k) *o++ = '0';
    std::memcpy(o, digits, static_cast<size_t>(n));
    o += n;
  }
  return o;
}

}  // namespace

// ---- reader ---------------------------------------------------------------

// Builds a Value from the shared tokenizer's tokens (json/lexer.h).
class Parser {
 public:
  explicit Parser(std::string_view text) : L_(text.data(), text.data() + text.size(), "invalid JSON at byte ") {}

  Status parseDocument(Value& v) {
    MLBRIDGE_RETURN_IF_ERROR(parseValue(v, 0));
    if (!L_.atEnd()) return L_.error("unexpected text after the value");
    return Status::OK();
  }

 private:
  Status parseValue(Value& v, int depth) {
    switch (L_.peek()) {
      case '{': return parseObject(v, depth + 1);
      case '[': return parseArray(v, depth + 1);
      case '"': {
        RawString s;
        MLBRIDGE_RETURN_IF_ERROR(L_.string(&s));
        v.kind_ = Value::Kind::kString;
        assignDecoded(s, v.text_);
        return Status::OK();
      }
      case 't':
      case 'f':
      case 'n':
        if (L_.word("true")) {
          v.kind_ = Value::Kind::kBool;
          v.bool_ = true;
          return Status::OK();
        }
        if (L_.word("false")) {
          v.kind_ = Value::Kind::kBool;
          v.bool_ = false;
          return Status::OK();
        }
        if (L_.word("null")) {
          v.kind_ = Value::Kind::kNull;
          return Status::OK();
        }
        return L_.error("invalid literal");
      default: {
        std::string_view tok;  // also NaN, Infinity, -Infinity
        MLBRIDGE_RETURN_IF_ERROR(L_.number(&tok));
        v.kind_ = Value::Kind::kNumber;
        v.text_.assign(tok.data(), tok.size());
        return Status::OK();
      }
    }
  }

  Status parseArray(Value& v, int depth) {
    if (depth > kMaxDepth) return L_.error("nesting too deep");
    MLBRIDGE_RETURN_IF_ERROR(L_.expect('['));
    v.kind_ = Value::Kind::kArray;
    if (L_.eat(']')) return Status::OK();
    for (;;) {
      v.items_.emplace_back();
      MLBRIDGE_RETURN_IF_ERROR(parseValue(v.items_.back(), depth));
      if (L_.eat(',')) continue;
      return L_.expect(']');
    }
  }

  Status parseObject(Value& v, int depth) {
    if (depth > kMaxDepth) return L_.error("nesting too deep");
    MLBRIDGE_RETURN_IF_ERROR(L_.expect('{'));
    v.kind_ = Value::Kind::kObject;
    if (L_.eat('}')) return Status::OK();
    for (;;) {
      RawString key;
      MLBRIDGE_RETURN_IF_ERROR(L_.string(&key));
      v.members_.emplace_back();
      assignDecoded(key, v.members_.back().first);
      MLBRIDGE_RETURN_IF_ERROR(L_.expect(':'));
      MLBRIDGE_RETURN_IF_ERROR(parseValue(v.members_.back().second, depth));
      if (L_.eat(',')) continue;
      return L_.expect('}');
    }
  }

  Lexer L_;
};

StatusOr<Value> parse(std::string_view text) {
  Value v;
  Parser parser(text);
  Status s = parser.parseDocument(v);
  if (!s.ok()) return s;
  return v;
}

const Value* Value::find(std::string_view key) const {
  if (kind_ != Kind::kObject) return nullptr;
  for (const auto& m : members_)
    if (m.first == key) return &m.second;
  return nullptr;
}

bool numberToInt64(std::string_view t, int64_t* out) {
  int64_t v;
  std::from_chars_result r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec == std::errc() && r.ptr == t.data() + t.size()) {
    *out = v;
    return true;
  }
  bool negative;
  uint64_t m;
  if (decimalToInteger(t, &negative, &m) != IntResult::kOk) return false;
  if (negative) {
    if (m > uint64_t(1) << 63) return false;
    *out = m == uint64_t(1) << 63 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(m);
  } else {
    if (m > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(m);
  }
  return true;
}

bool numberToUInt64(std::string_view t, uint64_t* out) {
  uint64_t v;
  std::from_chars_result r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec == std::errc() && r.ptr == t.data() + t.size()) {
    *out = v;
    return true;
  }
  bool negative;
  uint64_t m;
  if (decimalToInteger(t, &negative, &m) != IntResult::kOk) return false;
  if (negative && m != 0) return false;
  *out = m;
  return true;
}

bool numberToDouble(std::string_view t, double* out) { return textToFloat(t, out); }

bool Value::toInt64(int64_t* out) const { return kind_ == Kind::kNumber && numberToInt64(text_, out); }

bool Value::toUInt64(uint64_t* out) const { return kind_ == Kind::kNumber && numberToUInt64(text_, out); }

bool Value::toDouble(double* out) const {
  if (kind_ == Kind::kString) {
    if (text_ != "NaN" && text_ != "Infinity" && text_ != "-Infinity") return false;
  } else if (kind_ != Kind::kNumber) {
    return false;
  }
  return textToFloat(text_, out);
}

// ---- writers --------------------------------------------------------------

void appendString(std::string& out, std::string_view s) {
  out += '"';
  const char* run = s.data();
  const char* end = s.data() + s.size();
  for (const char* p = run; p < end; ++p) {
    unsigned char c = static_cast<unsigned char>(*p);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(run, static_cast<size_t>(p - run));
    run = p + 1;
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      default: {
        static const char kHex[] = "0123456789abcdef";
        char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out.append(u, 6);
      }
    }
  }
  out.append(run, static_cast<size_t>(end - run));
  out += '"';
}

char* writeFloat32(char* out, float v) { return writeFloatImpl(out, v); }
char* writeFloat32General(char* out, float v) { return writeFloatImpl(out, v, false); }
char* writeFloat64(char* out, double v) { return writeFloatImpl(out, v); }

void appendFloat32(std::string& out, float v) {
  char buf[kMaxFloatText];
  out.append(buf, static_cast<size_t>(writeFloatImpl(buf, v) - buf));
}
void appendFloat64(std::string& out, double v) {
  char buf[kMaxFloatText];
  out.append(buf, static_cast<size_t>(writeFloatImpl(buf, v) - buf));
}

void appendInt(std::string& out, int64_t v) {
  char buf[24];
  std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

void appendUInt(std::string& out, uint64_t v) {
  char buf[24];
  std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

}  // namespace json
}  // namespace mlbridge
