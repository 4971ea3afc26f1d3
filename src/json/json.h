// Small JSON reader and canonical writer helpers (docs/protocol.md, "json").
// The reader keeps numbers as text so int64/uint64/double all convert exactly.
#ifndef MLBRIDGE_SRC_JSON_JSON_H
#define MLBRIDGE_SRC_JSON_JSON_H

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mlbridge/status.h"

namespace mlbridge {
namespace json {

// ---- DOM reader (cold paths: headers, specs, test manifests) ------------
class Value {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::kNull; }
  bool isBool() const { return kind_ == Kind::kBool; }
  bool isNumber() const { return kind_ == Kind::kNumber; }
  bool isString() const { return kind_ == Kind::kString; }
  bool isArray() const { return kind_ == Kind::kArray; }
  bool isObject() const { return kind_ == Kind::kObject; }

  bool boolean() const { return bool_; }
  // kString: the unescaped string; kNumber: the number's text as written.
  const std::string& text() const { return text_; }
  const std::vector<Value>& items() const { return items_; }                           // kArray
  const std::vector<std::pair<std::string, Value>>& members() const { return members_; }  // kObject
  // Member lookup (first match); nullptr if absent or not an object.
  const Value* find(std::string_view key) const;

  // Exact conversions of a kNumber; false if not a number, not integral,
  // or out of range.
  bool toInt64(int64_t* out) const;
  bool toUInt64(uint64_t* out) const;
  // kNumber, or the strings "NaN", "Infinity", "-Infinity".
  bool toDouble(double* out) const;

 private:
  friend class Parser;
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  std::string text_;
  std::vector<Value> items_;
  std::vector<std::pair<std::string, Value>> members_;
};

// Exact conversions of a number token's text (a Value's text(), or what
// json::Lexer::number hands out), with the rules above.
bool numberToInt64(std::string_view token, int64_t* out);
bool numberToUInt64(std::string_view token, uint64_t* out);
bool numberToDouble(std::string_view token, double* out);

// Parses one JSON value (RFC 8259, plus bare NaN/Infinity/-Infinity tokens);
// trailing non-space text is an error. Depth is limited (no stack overflow on
// hostile input). Errors are kDataLoss with the byte offset.
StatusOr<Value> parse(std::string_view text);

// ---- canonical writer helpers (append to `out`) --------------------------
// UTF-8 passed through; '"' '\\' and control characters escaped as Python's
// json.dumps(ensure_ascii=False) does.
void appendString(std::string& out, std::string_view s);
// Shortest round-trip digits for the value's own type, laid out like Python's
// repr(); non-finite values as "NaN", "Infinity", "-Infinity" (with quotes).
void appendFloat32(std::string& out, float v);
void appendFloat64(std::string& out, double v);
// The same text written at `out`, which has room for kMaxFloatText bytes;
// returns the end (for bulk writers that size their buffer once).
constexpr size_t kMaxFloatText = 64;
char* writeFloat32(char* out, float v);
// writeFloat32 without its shortcut for exact short decimals (tests compare the two).
char* writeFloat32General(char* out, float v);
char* writeFloat64(char* out, double v);
void appendInt(std::string& out, int64_t v);
void appendUInt(std::string& out, uint64_t v);

}  // namespace json
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_JSON_JSON_H
