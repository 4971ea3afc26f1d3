// The framed json format (docs/protocol.md, "json payload"). Writers emit the
// canonical bytes; the reply reader is a pull tokenizer that parses numbers
// straight into the runner's output buffers (no DOM, no heap allocation for
// numeric outputs) and accepts any valid JSON: any key order, white space,
// escapes, number forms, unknown keys.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "json/json.h"
#include "json/lexer.h"
#include "json/utf8.h"
#include "wire/codec.h"
#include "wire/framing.h"

namespace mlbridge {
namespace wire {
namespace {

using json::assignDecoded;
using json::decoded;
using json::decodeSmall;
using json::Lexer;
using json::RawString;
using json::stringEquals;

constexpr char kFormatByte = 'J';
constexpr size_t kMaxDims = 64;  // more is refused, not a real tensor

constexpr FrameFormat kFrame{kFormatByte, "json"};

// One length-prefixed payload formatted in place in the scratch buffer.
class Frame {
 public:
  explicit Frame(OutputList& out) : out_(out), s_(out.scratch()), start_(s_.size()) { s_.append(4, '\0'); }
  std::string& s() { return s_; }
  Status finish(const char* what) {
    size_t len = s_.size() - start_ - kFrameHeaderSize;
    if (len > 0xFFFFFFFFu) {
      s_.resize(start_);
      return Status(StatusCode::kResourceExhausted,
                    std::string(what) + " is " + std::to_string(len) + " bytes: too large for one frame");
    }
    for (int i = 0; i < 4; ++i) s_[start_ + i] = static_cast<char>(len >> (8 * i));
    out_.commitScratch(s_.size() - start_);
    return Status::OK();
  }

 private:
  OutputList& out_;
  std::string& s_;
  size_t start_;
};

// ---- encoding -------------------------------------------------------------

template <class T>
T load(const void* p, size_t k) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + k * sizeof(T), sizeof(T));
  return v;
}

template <class T>
void appendInts(std::string& s, const void* data, size_t n) {
  char buf[24];
  for (size_t k = 0; k < n; ++k) {
    char* b = buf;
    if (k) *b++ = ',';
    std::to_chars_result r = std::to_chars(b, buf + sizeof buf, load<T>(data, k));
    s.append(buf, static_cast<size_t>(r.ptr - buf));
  }
}

// Formats a block of elements into a stack buffer, then appends the block:
// no capacity check or append per element (the string is reserved by the caller).
template <class T>
void appendReals(std::string& s, const void* data, size_t n) {
  constexpr size_t kBlock = 128;
  char buf[kBlock * (json::kMaxFloatText + 1)];
  for (size_t k0 = 0; k0 < n; k0 += kBlock) {
    const size_t k1 = std::min(n, k0 + kBlock);
    char* o = buf;
    for (size_t k = k0; k < k1; ++k) {
      if (k) *o++ = ',';
      if (sizeof(T) == 4)
        o = json::writeFloat32(o, static_cast<float>(load<T>(data, k)));
      else
        o = json::writeFloat64(o, static_cast<double>(load<T>(data, k)));
    }
    s.append(buf, static_cast<size_t>(o - buf));
  }
}

// Longest text of one element plus its comma, to reserve once per tensor.
size_t maxElementWidth(DType t) {
  switch (t) {
    case DType::kFloat32: return 16;  // -1.1754944e-38,
    case DType::kFloat64: return 25;  // -2.2250738585072014e-308,
    case DType::kBool: return 6;
    case DType::kString: return 8;    // a guess: strings are rare
    default: return 2 + 3 * dtypeSize(t);
  }
}

void appendData(std::string& s, const TensorRef& t) {
  const size_t n = t.spec->elementCount();
  s.reserve(s.size() + n * maxElementWidth(t.spec->type()) + 2);
  s += '[';
  switch (t.spec->type()) {
    case DType::kFloat32: appendReals<float>(s, t.data, n); break;
    case DType::kFloat64: appendReals<double>(s, t.data, n); break;
    case DType::kInt8: appendInts<int8_t>(s, t.data, n); break;
    case DType::kUInt8: appendInts<uint8_t>(s, t.data, n); break;
    case DType::kInt16: appendInts<int16_t>(s, t.data, n); break;
    case DType::kUInt16: appendInts<uint16_t>(s, t.data, n); break;
    case DType::kInt32: appendInts<int32_t>(s, t.data, n); break;
    case DType::kUInt32: appendInts<uint32_t>(s, t.data, n); break;
    case DType::kInt64: appendInts<int64_t>(s, t.data, n); break;
    case DType::kUInt64: appendInts<uint64_t>(s, t.data, n); break;
    case DType::kBool:
      for (size_t k = 0; k < n; ++k) {
        if (k) s += ',';
        s += load<uint8_t>(t.data, k) ? "true" : "false";
      }
      break;
    case DType::kString:
      for (size_t k = 0; k < n; ++k) {
        if (k) s += ',';
        json::appendString(s, static_cast<const std::string*>(t.data)[k]);
      }
      break;
    case DType::kInvalid: break;
  }
  s += ']';
}

void appendShape(std::string& s, const std::vector<int64_t>& shape) {
  s += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    json::appendInt(s, shape[i]);
  }
  s += ']';
}

void appendTensor(std::string& s, const TensorRef& t) {
  s += "{\"name\":";
  json::appendString(s, t.spec->name());
  s += ",\"type\":\"";
  s += dtypeName(t.spec->type());
  s += "\",\"shape\":";
  appendShape(s, t.spec->shape());
  s += ",\"data\":";
  appendData(s, t);
  s += '}';
}

Status checkRefs(Span<const TensorRef> tensors, const char* what) {
  for (const TensorRef& t : tensors) {
    if (!t.spec) return invalidArgument(std::string(what) + " tensor without a spec");
    if (t.spec->type() == DType::kInvalid)
      return invalidArgument(std::string(what) + " '" + t.spec->name() + "' has an invalid dtype");
    if (!t.data && t.spec->elementCount() != 0 && (t.spec->type() == DType::kString || t.spec->byteSize() != 0))
      return invalidArgument(std::string(what) + " '" + t.spec->name() + "' has no data");
    if (t.spec->type() == DType::kString) {
      const std::string* strings = static_cast<const std::string*>(t.data);
      for (size_t k = 0, n = t.spec->elementCount(); k < n; ++k)
        if (!utf8::isValid(strings[k]))
          return invalidArgument(std::string(what) + " '" + t.spec->name() + "' element " + std::to_string(k) +
                                 " is not valid UTF-8: the json format carries text only (protobuf carries bytes)");
    }
  }
  return Status::OK();
}

// {"observation":{...}} and {"reply":{...}} share their layout.
Status encodeTensorMessage(const char* kind, int64_t id, Span<const TensorRef> tensors, OutputList& out) {
  MLBRIDGE_RETURN_IF_ERROR(checkRefs(tensors, kind));
  Frame frame(out);
  std::string& s = frame.s();
  s += "{\"";
  s += kind;
  s += "\":{\"id\":";
  json::appendInt(s, id);
  s += ",\"tensors\":[";
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (i) s += ',';
    appendTensor(s, tensors[i]);
  }
  s += "]}}";
  return frame.finish(kind);
}

// ---- number conversion (shared by the hot and the cold path) --------------

// Exact integer of type T from a JSON number token. Integral values in any
// form ("3", "3.0", "3e0") are accepted; fractions and out-of-range values
// are not.
template <class T>
bool intFromToken(std::string_view tok, T* out) {
  using Wide = std::conditional_t<std::is_signed<T>::value, int64_t, uint64_t>;
  Wide w;
  const char* e = tok.data() + tok.size();
  std::from_chars_result r = std::from_chars(tok.data(), e, w);
  if (r.ec != std::errc() || r.ptr != e) {
    // Rare non-canonical forms ("3.0", "1e3"): the exact decimal conversion
    // the DOM uses too (allocates nothing).
    if (std::is_signed<T>::value) {
      int64_t x;
      if (!json::numberToInt64(tok, &x)) return false;
      w = static_cast<Wide>(x);
    } else {
      uint64_t x;
      if (!json::numberToUInt64(tok, &x)) return false;
      w = static_cast<Wide>(x);
    }
  }
  if (w < static_cast<Wide>(std::numeric_limits<T>::min()) || w > static_cast<Wide>(std::numeric_limits<T>::max()))
    return false;
  *out = static_cast<T>(w);
  return true;
}

// Nearest T to a JSON number token (or NaN/Infinity/-Infinity), rounded once
// from the text. Values below the smallest subnormal round to zero; values
// beyond the type's range are errors.
template <class T>
bool realFromToken(std::string_view tok, T* out) {
  T v;
  const char* e = tok.data() + tok.size();
  std::from_chars_result r = std::from_chars(tok.data(), e, v, std::chars_format::general);
  if (r.ec == std::errc() && r.ptr == e) {
    *out = v;
    return true;
  }
  double d;
  if (!json::numberToDouble(tok, &d)) return false;  // also double overflow
  if (std::isnan(d) || std::isinf(d)) {
    *out = static_cast<T>(d);
    return true;
  }
  if (r.ec != std::errc::result_out_of_range || std::fabs(d) >= 1) return false;  // overflow of T
  *out = std::signbit(d) ? -T(0) : T(0);
  return true;
}

bool nonFiniteName(std::string_view s, double* out) {
  if (s == "NaN") *out = std::numeric_limits<double>::quiet_NaN();
  else if (s == "Infinity") *out = std::numeric_limits<double>::infinity();
  else if (s == "-Infinity") *out = -std::numeric_limits<double>::infinity();
  else return false;
  return true;
}

// Element errors say what is wrong; readList adds which tensor and element.
Status badValue(const TensorSpec& spec, std::string_view tok) {
  return dataLoss(std::string(tok) + " is not a valid " + dtypeName(spec.type()));
}

template <class T>
Status readNumber(Lexer& L, const TensorSpec& spec, T* out) {
  if (L.peek() == '"') {  // "NaN", "Infinity", "-Infinity" for floats
    RawString s;
    MLBRIDGE_RETURN_IF_ERROR(L.string(&s));
    char buf[16];
    std::string_view text;
    double d;
    if (std::is_floating_point<T>::value && decodeSmall(s, buf, &text) && nonFiniteName(text, &d)) {
      *out = static_cast<T>(d);
      return Status::OK();
    }
    return badValue(spec, "\"" + decoded(s) + "\"");
  }
  std::string_view tok;
  MLBRIDGE_RETURN_IF_ERROR(L.number(&tok));
  bool ok;
  if constexpr (std::is_floating_point<T>::value)
    ok = realFromToken(tok, out);
  else
    ok = intFromToken(tok, out);
  if (!ok) return badValue(spec, tok);
  return Status::OK();
}

Status readBool(Lexer& L, const TensorSpec& spec, uint8_t* out) {
  if (L.word("true")) {
    *out = 1;
    return Status::OK();
  }
  if (L.word("false")) {
    *out = 0;
    return Status::OK();
  }
  if (L.peek() == '"') return badValue(spec, "a string");
  std::string_view tok;
  MLBRIDGE_RETURN_IF_ERROR(L.number(&tok));
  if (tok == "0" || tok == "1") {
    *out = tok[0] == '1';
    return Status::OK();
  }
  return badValue(spec, tok);
}

Status valueError(const TensorSpec& spec, size_t k, const Status& s) {
  return Status(s.code(), "reply tensor '" + spec.name() + "' value " + std::to_string(k) + ": " + s.message());
}

// Reads a flat list of the spec's dtype into dst; *count = elements read.
template <class T, class Read>
Status readList(Lexer& L, const TensorSpec& spec, void* dst, size_t* count, Read read) {
  MLBRIDGE_RETURN_IF_ERROR(L.expect('['));
  const size_t cap = spec.elementCount();
  char* d = static_cast<char*>(dst);
  size_t n = 0;
  if (!L.eat(']')) {
    for (;;) {
      if (n == cap)
        return dataLoss("reply tensor '" + spec.name() + "' has more than the " + std::to_string(cap) +
                        " values of its shape " + shapeToString(spec.shape()));
      T v;
      Status s = read(L, spec, &v);
      if (!s.ok()) return valueError(spec, n, s);
      std::memcpy(d + n * sizeof(T), &v, sizeof(T));
      ++n;
      if (L.eat(',')) continue;
      MLBRIDGE_RETURN_IF_ERROR(L.expect(']'));
      break;
    }
  }
  *count = n;
  return Status::OK();
}

Status readStrings(Lexer& L, const TensorSpec& spec, std::string* dst, size_t* count) {
  MLBRIDGE_RETURN_IF_ERROR(L.expect('['));
  const size_t cap = spec.elementCount();
  size_t n = 0;
  if (!L.eat(']')) {
    for (;;) {
      if (n == cap)
        return dataLoss("reply tensor '" + spec.name() + "' has more than the " + std::to_string(cap) +
                        " values of its shape " + shapeToString(spec.shape()));
      if (L.peek() != '"') return valueError(spec, n, dataLoss("not a string"));
      RawString s;
      Status st = L.string(&s);
      if (!st.ok()) return valueError(spec, n, st);
      assignDecoded(s, dst[n++]);
      if (L.eat(',')) continue;
      MLBRIDGE_RETURN_IF_ERROR(L.expect(']'));
      break;
    }
  }
  *count = n;
  return Status::OK();
}

template <class T>
Status readNumbers(Lexer& L, const TensorSpec& spec, void* dst, size_t* count) {
  return readList<T>(L, spec, dst, count, readNumber<T>);
}

Status readData(Lexer& L, const MutableTensorRef& out, size_t* count) {
  const TensorSpec& spec = *out.spec;
  switch (spec.type()) {
    case DType::kFloat32: return readNumbers<float>(L, spec, out.data, count);
    case DType::kFloat64: return readNumbers<double>(L, spec, out.data, count);
    case DType::kInt8: return readNumbers<int8_t>(L, spec, out.data, count);
    case DType::kUInt8: return readNumbers<uint8_t>(L, spec, out.data, count);
    case DType::kInt16: return readNumbers<int16_t>(L, spec, out.data, count);
    case DType::kUInt16: return readNumbers<uint16_t>(L, spec, out.data, count);
    case DType::kInt32: return readNumbers<int32_t>(L, spec, out.data, count);
    case DType::kUInt32: return readNumbers<uint32_t>(L, spec, out.data, count);
    case DType::kInt64: return readNumbers<int64_t>(L, spec, out.data, count);
    case DType::kUInt64: return readNumbers<uint64_t>(L, spec, out.data, count);
    case DType::kBool: return readList<uint8_t>(L, spec, out.data, count, readBool);
    case DType::kString: return readStrings(L, spec, static_cast<std::string*>(out.data), count);
    case DType::kInvalid: break;
  }
  return invalidArgument("output '" + spec.name() + "' has an invalid dtype");
}

// What one reply tensor said about itself; checked against the output spec.
struct TensorHeader {
  const TensorSpec* spec;
  bool hasName = false, hasType = false, hasShape = false;
  bool nameMatches = false;
  RawString name;
  DType type = DType::kInvalid;
  int64_t dims[kMaxDims];
  size_t ndims = 0;

  // Checks the parts seen so far (unseen parts are taken from the spec).
  Status check() const {
    std::string actual;
    std::string_view nm = spec->name();
    if (hasName && !nameMatches) {
      actual = decoded(name);
      nm = actual;
    }
    DType t = hasType ? type : spec->type();
    Span<const int64_t> shape = hasShape ? Span<const int64_t>(dims, ndims)
                                         : Span<const int64_t>(spec->shape().data(), spec->shape().size());
    return checkTensorAgainstSpec(*spec, nm, t, shape, "reply tensor");
  }
};

Status readTensor(Lexer& L, const MutableTensorRef& out, size_t index) {
  const TensorSpec& spec = *out.spec;
  TensorHeader h;
  h.spec = &spec;
  bool hasData = false;
  size_t count = 0;
  MLBRIDGE_RETURN_IF_ERROR(L.expect('{'));
  if (!L.eat('}')) {
    for (;;) {
      RawString key;
      MLBRIDGE_RETURN_IF_ERROR(L.string(&key));
      MLBRIDGE_RETURN_IF_ERROR(L.expect(':'));
      if (stringEquals(key, "name")) {
        MLBRIDGE_RETURN_IF_ERROR(L.string(&h.name));
        h.hasName = true;
        h.nameMatches = stringEquals(h.name, spec.name());
        if (!h.nameMatches) return h.check();
      } else if (stringEquals(key, "type")) {
        RawString t;
        MLBRIDGE_RETURN_IF_ERROR(L.string(&t));
        char buf[32];
        std::string_view text;
        h.type = decodeSmall(t, buf, &text) ? parseDType(text) : DType::kInvalid;
        if (h.type == DType::kInvalid)
          return dataLoss("reply tensor '" + spec.name() + "' has unknown type \"" + decoded(t) + "\"");
        h.hasType = true;
        MLBRIDGE_RETURN_IF_ERROR(h.check());
      } else if (stringEquals(key, "shape")) {
        MLBRIDGE_RETURN_IF_ERROR(L.expect('['));
        h.ndims = 0;
        if (!L.eat(']')) {
          for (;;) {
            std::string_view tok;
            MLBRIDGE_RETURN_IF_ERROR(L.number(&tok));
            if (h.ndims == kMaxDims)
              return dataLoss("reply tensor '" + spec.name() + "' has more than " + std::to_string(kMaxDims) +
                              " dimensions");
            if (!intFromToken(tok, &h.dims[h.ndims]))
              return dataLoss("reply tensor '" + spec.name() + "' has a bad dimension " + std::string(tok));
            ++h.ndims;
            if (L.eat(',')) continue;
            MLBRIDGE_RETURN_IF_ERROR(L.expect(']'));
            break;
          }
        }
        h.hasShape = true;
        MLBRIDGE_RETURN_IF_ERROR(h.check());
      } else if (stringEquals(key, "data")) {
        MLBRIDGE_RETURN_IF_ERROR(readData(L, out, &count));
        hasData = true;
      } else {
        MLBRIDGE_RETURN_IF_ERROR(L.skipValue(0));
      }
      if (L.eat(',')) continue;
      MLBRIDGE_RETURN_IF_ERROR(L.expect('}'));
      break;
    }
  }
  const char* missing = !h.hasName ? "name" : !h.hasType ? "type" : !h.hasShape ? "shape" : !hasData ? "data" : nullptr;
  if (missing)
    return dataLoss("reply tensor " + std::to_string(index) + " ('" + spec.name() + "' expected) has no \"" + missing +
                    "\"");
  if (count != spec.elementCount())
    return dataLoss("reply tensor '" + spec.name() + "' has " + std::to_string(count) + " values, expected " +
                    std::to_string(spec.elementCount()));
  return Status::OK();
}

struct ReplyState {
  bool hasId = false;
  int64_t id = 0;
  bool hasTensors = false;
  size_t tensors = 0;
  bool hasError = false;
  RawString error;
};

Status readReplyBody(Lexer& L, Span<const MutableTensorRef> outputs, ReplyState& st) {
  MLBRIDGE_RETURN_IF_ERROR(L.expect('{'));
  if (L.eat('}')) return Status::OK();
  for (;;) {
    RawString key;
    MLBRIDGE_RETURN_IF_ERROR(L.string(&key));
    MLBRIDGE_RETURN_IF_ERROR(L.expect(':'));
    if (stringEquals(key, "id")) {
      std::string_view tok;
      MLBRIDGE_RETURN_IF_ERROR(L.number(&tok));
      if (!intFromToken(tok, &st.id)) return dataLoss("reply id " + std::string(tok) + " is not an int64");
      st.hasId = true;
    } else if (stringEquals(key, "tensors")) {
      MLBRIDGE_RETURN_IF_ERROR(L.expect('['));
      st.hasTensors = true;
      st.tensors = 0;
      if (!L.eat(']')) {
        for (;;) {
          if (st.tensors == outputs.size())
            return dataLoss("reply has more than the " + std::to_string(outputs.size()) + " tensors expected");
          MLBRIDGE_RETURN_IF_ERROR(readTensor(L, outputs[st.tensors], st.tensors));
          ++st.tensors;
          if (L.eat(',')) continue;
          MLBRIDGE_RETURN_IF_ERROR(L.expect(']'));
          break;
        }
      }
    } else if (stringEquals(key, "error")) {
      if (L.peek() == 'n' && L.word("null")) {  // an explicit "no error"
        st.hasError = false;
      } else {
        MLBRIDGE_RETURN_IF_ERROR(L.string(&st.error));
        st.hasError = true;
      }
    } else {
      MLBRIDGE_RETURN_IF_ERROR(L.skipValue(0));
    }
    if (L.eat(',')) continue;
    return L.expect('}');
  }
}

bool isKindName(const RawString& key, const char** kind) {
  for (const char* k : {"header", "context", "observation", "reply", "end"})
    if (stringEquals(key, k)) {
      *kind = k;
      return true;
    }
  return false;
}

// ---- cold path: DOM decoding of recorded streams --------------------------

template <class T>
bool put(T x, void* dst, size_t k) {
  std::memcpy(static_cast<char*>(dst) + k * sizeof(T), &x, sizeof(T));
  return true;
}

template <class T>
bool storeInteger(const json::Value& v, void* dst, size_t k) {
  T x;
  return v.isNumber() && intFromToken(v.text(), &x) && put(x, dst, k);
}

template <class T>
bool storeReal(const json::Value& v, void* dst, size_t k) {
  T x;
  double d;
  if (v.isString()) return nonFiniteName(v.text(), &d) && put(static_cast<T>(d), dst, k);
  return v.isNumber() && realFromToken(v.text(), &x) && put(x, dst, k);
}

bool storeValue(const json::Value& v, DType t, void* dst, size_t k) {
  switch (t) {
    case DType::kFloat32: return storeReal<float>(v, dst, k);
    case DType::kFloat64: return storeReal<double>(v, dst, k);
    case DType::kInt8: return storeInteger<int8_t>(v, dst, k);
    case DType::kUInt8: return storeInteger<uint8_t>(v, dst, k);
    case DType::kInt16: return storeInteger<int16_t>(v, dst, k);
    case DType::kUInt16: return storeInteger<uint16_t>(v, dst, k);
    case DType::kInt32: return storeInteger<int32_t>(v, dst, k);
    case DType::kUInt32: return storeInteger<uint32_t>(v, dst, k);
    case DType::kInt64: return storeInteger<int64_t>(v, dst, k);
    case DType::kUInt64: return storeInteger<uint64_t>(v, dst, k);
    case DType::kBool:
      if (v.isBool()) return put(static_cast<uint8_t>(v.boolean() ? 1 : 0), dst, k);
      if (v.isNumber() && (v.text() == "0" || v.text() == "1")) return put(static_cast<uint8_t>(v.text() == "1"), dst, k);
      return false;
    default: return false;
  }
}

Status decodeTensorValue(const json::Value& v, DecodedTensor* out) {
  if (!v.isObject()) return dataLoss("tensor is not a JSON object");
  const json::Value* name = v.find("name");
  const json::Value* type = v.find("type");
  const json::Value* shape = v.find("shape");
  const json::Value* data = v.find("data");
  if (!name || !name->isString()) return dataLoss("tensor has no string \"name\"");
  const std::string& nm = name->text();
  if (!type || !type->isString()) return dataLoss("tensor '" + nm + "' has no string \"type\"");
  DType dt = parseDType(type->text());
  if (dt == DType::kInvalid) return dataLoss("tensor '" + nm + "' has unknown type \"" + type->text() + "\"");
  if (!shape || !shape->isArray()) return dataLoss("tensor '" + nm + "' has no \"shape\" list");
  if (!data || !data->isArray()) return dataLoss("tensor '" + nm + "' has no \"data\" list");
  std::vector<int64_t> dims;
  for (const json::Value& d : shape->items()) {
    int64_t x;
    if (!d.toInt64(&x)) return dataLoss("tensor '" + nm + "' has a non-integer dimension");
    dims.push_back(x);
  }
  out->spec = TensorSpec(nm, dt, std::move(dims));
  MLBRIDGE_RETURN_IF_ERROR(out->spec.validate());
  const size_t n = out->spec.elementCount();
  if (data->items().size() != n)
    return dataLoss("tensor '" + nm + "' has " + std::to_string(data->items().size()) + " values, expected " +
                    std::to_string(n) + " for shape " + shapeToString(out->spec.shape()));
  if (dt == DType::kString) {
    out->strings.reserve(n);
    for (const json::Value& s : data->items()) {
      if (!s.isString()) return dataLoss("tensor '" + nm + "' has a value that is not a string");
      out->strings.push_back(s.text());
    }
    return Status::OK();
  }
  out->bytes.assign(out->spec.byteSize(), 0);
  for (size_t k = 0; k < n; ++k)
    if (!storeValue(data->items()[k], dt, out->bytes.data(), k))
      return dataLoss("tensor '" + nm + "' value " + std::to_string(k) + " is not a valid " + dtypeName(dt));
  return Status::OK();
}

Status decodeTensorList(const json::Value* list, DecodedMessage& m) {
  if (!list) return Status::OK();
  if (!list->isArray()) return dataLoss("\"tensors\" is not a list");
  for (const json::Value& t : list->items()) {
    m.tensors.emplace_back();
    MLBRIDGE_RETURN_IF_ERROR(decodeTensorValue(t, &m.tensors.back()));
  }
  return Status::OK();
}

Status decodeSpecList(const json::Value* list, const char* what, std::vector<TensorSpec>& out) {
  if (!list) return Status::OK();
  if (!list->isArray()) return dataLoss(std::string("header \"") + what + "\" is not a list");
  for (const json::Value& v : list->items()) {
    StatusOr<TensorSpec> s = TensorSpec::fromJSONValue(v);
    if (!s.ok()) return Status(s.status().code(), std::string("header ") + what + ": " + s.status().message());
    out.push_back(std::move(*s));
  }
  return Status::OK();
}

Status decodeId(const json::Value& body, const char* kind, int64_t* id) {
  const json::Value* v = body.find("id");
  if (!v || !v->toInt64(id)) return dataLoss(std::string(kind) + " has no integer \"id\"");
  return Status::OK();
}

Status decodeMessageValue(Span<const uint8_t> payload, bool toModel, DecodedMessage& m) {
  StatusOr<json::Value> root = json::parse(std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()));
  if (!root.ok()) return root.status();
  if (!root->isObject()) return dataLoss("message is not a JSON object");
  const char* kind = nullptr;
  const json::Value* body = nullptr;
  for (const auto& member : root->members()) {
    RawString key{member.first, false};
    const char* k;
    if (!isKindName(key, &k)) continue;  // unknown keys are skipped
    if (kind) return dataLoss(std::string("message has two kinds, \"") + kind + "\" and \"" + k + "\"");
    kind = k;
    body = &member.second;
  }
  if (!kind) return dataLoss("message has no kind (header, context, observation, reply or end)");
  bool isReply = std::strcmp(kind, "reply") == 0;
  if (toModel == isReply)
    return dataLoss(std::string("unexpected ") + kind + " message in a " +
                    (toModel ? "compiler -> model" : "model -> compiler") + " stream");
  if (!body->isObject()) return dataLoss(std::string("\"") + kind + "\" is not a JSON object");
  if (std::strcmp(kind, "header") == 0) {
    m.kind = DecodedMessage::Kind::kHeader;
    const json::Value* version = body->find("version");
    int64_t ver = kProtocolVersion;  // absent: the current version
    if (version && !version->toInt64(&ver)) return dataLoss("header \"version\" is not an integer");
    if (ver != kProtocolVersion)
      return unimplemented("header announces protocol version " + std::to_string(ver) +
                           ", this reader supports version " + std::to_string(kProtocolVersion));
    MLBRIDGE_RETURN_IF_ERROR(decodeSpecList(body->find("features"), "features", m.specs.features));
    MLBRIDGE_RETURN_IF_ERROR(decodeSpecList(body->find("advice"), "advice", m.specs.advice));
    MLBRIDGE_RETURN_IF_ERROR(validateSpecs(m.specs.features, "feature"));
    return validateSpecs(m.specs.advice, "advice");
  }
  if (std::strcmp(kind, "context") == 0) {
    m.kind = DecodedMessage::Kind::kContext;
    const json::Value* name = body->find("name");  // absent: ""
    if (name && !name->isString()) return dataLoss("context \"name\" is not a string");
    if (name) m.name = name->text();
    return Status::OK();
  }
  if (std::strcmp(kind, "observation") == 0) {
    m.kind = DecodedMessage::Kind::kObservation;
    MLBRIDGE_RETURN_IF_ERROR(decodeId(*body, "observation", &m.id));
    return decodeTensorList(body->find("tensors"), m);
  }
  if (isReply) {
    m.kind = DecodedMessage::Kind::kReply;
    MLBRIDGE_RETURN_IF_ERROR(decodeId(*body, "reply", &m.id));
    const json::Value* error = body->find("error");
    if (error && !error->isNull()) {
      if (!error->isString()) return dataLoss("reply \"error\" is not a string");
      m.hasError = true;
      m.error = error->text();
    }
    return decodeTensorList(body->find("tensors"), m);
  }
  m.kind = DecodedMessage::Kind::kEnd;
  return Status::OK();
}

class JsonCodec final : public FramedCodec {
 public:
  JsonCodec() : FramedCodec(kFrame, decodeMessageValue) {}

  WireFormat format() const override { return WireFormat::kJson; }

  Status encodeHeader(const SessionSpecs& specs, OutputList& out) override {
    MLBRIDGE_RETURN_IF_ERROR(checkSpecs(specs));
    std::string& pre = out.scratch();
    appendPreamble(pre, kFrame);
    out.commitScratch(kPreambleSize);
    Frame frame(out);
    std::string& s = frame.s();
    s += "{\"header\":{\"version\":";
    json::appendInt(s, kProtocolVersion);
    s += ",\"features\":[";
    for (size_t i = 0; i < specs.features.size(); ++i) {
      if (i) s += ',';
      specs.features[i].appendJSON(s);
    }
    s += "],\"advice\":[";
    for (size_t i = 0; i < specs.advice.size(); ++i) {
      if (i) s += ',';
      specs.advice[i].appendJSON(s);
    }
    s += "]}}";
    return frame.finish("header");
  }

  Status encodeContext(std::string_view name, OutputList& out) override {
    Frame frame(out);
    std::string& s = frame.s();
    std::string fixed;
    s += "{\"context\":{\"name\":";
    json::appendString(s, utf8::repaired(name, fixed));
    s += "}}";
    return frame.finish("context");
  }

  Status encodeObservation(int64_t id, Span<const TensorRef> features, OutputList& out) override {
    return encodeTensorMessage("observation", id, features, out);
  }

  Status encodeEnd(OutputList& out) override {
    Frame frame(out);
    frame.s() += "{\"end\":{}}";
    return frame.finish("end");
  }

  Status encodeReply(int64_t id, Span<const TensorRef> advice, OutputList& out) override {
    return encodeTensorMessage("reply", id, advice, out);
  }

  Status encodeReplyError(int64_t id, std::string_view message, OutputList& out) override {
    // As the protobuf format (where an empty error reads as none): never empty.
    if (message.empty()) message = "unknown model error";
    Frame frame(out);
    std::string& s = frame.s();
    s += "{\"reply\":{\"id\":";
    json::appendInt(s, id);
    std::string fixed;
    s += ",\"error\":";
    json::appendString(s, utf8::repaired(message, fixed));
    s += "}}";
    return frame.finish("error reply");
  }

  Status decodeReply(Span<const uint8_t> payload, int64_t expectedId,
                     Span<const MutableTensorRef> outputs) const override {
    const char* b = reinterpret_cast<const char*>(payload.data());
    Lexer L(b, b + payload.size(), "invalid JSON reply at byte ");
    ReplyState st;
    bool sawReply = false;
    MLBRIDGE_RETURN_IF_ERROR(L.expect('{'));
    if (!L.eat('}')) {
      for (;;) {
        RawString key;
        MLBRIDGE_RETURN_IF_ERROR(L.string(&key));
        MLBRIDGE_RETURN_IF_ERROR(L.expect(':'));
        const char* kind;
        if (stringEquals(key, "reply")) {
          MLBRIDGE_RETURN_IF_ERROR(readReplyBody(L, outputs, st));
          sawReply = true;
        } else if (isKindName(key, &kind)) {
          return dataLoss(std::string("expected a reply from the model, got a message of kind \"") + kind + "\"");
        } else {
          MLBRIDGE_RETURN_IF_ERROR(L.skipValue(0));
        }
        if (L.eat(',')) continue;
        MLBRIDGE_RETURN_IF_ERROR(L.expect('}'));
        break;
      }
    }
    if (!L.atEnd()) return L.error("unexpected text after the message");
    std::string errorText;  // stays empty (no allocation) unless the model sent an error
    if (st.hasError) errorText = decoded(st.error);
    ReplySummary summary;
    summary.sawReply = sawReply;
    summary.hasId = st.hasId;
    summary.id = st.id;
    summary.hasTensors = st.hasTensors;
    summary.tensors = st.tensors;
    summary.hasError = st.hasError;
    summary.error = errorText;
    return checkReply(summary, expectedId, outputs.size());
  }
};

}  // namespace

std::unique_ptr<Codec> makeJsonCodec() { return std::make_unique<JsonCodec>(); }

}  // namespace wire
}  // namespace mlbridge
