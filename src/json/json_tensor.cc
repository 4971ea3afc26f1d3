#include "json/json_tensor.h"

#include <cmath>
#include <charconv>
#include <cstring>
#include <limits>

namespace mlbridge {
namespace json {

namespace {

template <class T>
bool readInt(const Value& v, void* dst, size_t k) {
  T out;
  if (std::numeric_limits<T>::is_signed) {
    int64_t x;
    if (!v.toInt64(&x) || x < int64_t(std::numeric_limits<T>::min()) || x > int64_t(std::numeric_limits<T>::max()))
      return false;
    out = static_cast<T>(x);
  } else {
    uint64_t x;
    if (!v.toUInt64(&x) || x > uint64_t(std::numeric_limits<T>::max())) return false;
    out = static_cast<T>(x);
  }
  std::memcpy(static_cast<char*>(dst) + k * sizeof(T), &out, sizeof(T));
  return true;
}

template <class T>
bool readReal(const Value& v, void* dst, size_t k) {
  double d;
  if (!v.toDouble(&d)) return false;
  // Parse float32 from the text directly: double-then-float rounds twice.
  // (from_chars, unlike strtof, ignores the locale.)
  T out = static_cast<T>(d);
  if (sizeof(T) == 4 && v.isNumber()) {
    const std::string& t = v.text();
    std::from_chars(t.data(), t.data() + t.size(), out);
  }
  std::memcpy(static_cast<char*>(dst) + k * sizeof(T), &out, sizeof(T));
  return true;
}

bool readOne(const Value& v, DType t, void* dst, size_t k) {
  switch (t) {
    case DType::kInt8: return readInt<int8_t>(v, dst, k);
    case DType::kUInt8: return readInt<uint8_t>(v, dst, k);
    case DType::kInt16: return readInt<int16_t>(v, dst, k);
    case DType::kUInt16: return readInt<uint16_t>(v, dst, k);
    case DType::kInt32: return readInt<int32_t>(v, dst, k);
    case DType::kUInt32: return readInt<uint32_t>(v, dst, k);
    case DType::kInt64: return readInt<int64_t>(v, dst, k);
    case DType::kUInt64: return readInt<uint64_t>(v, dst, k);
    case DType::kFloat32: return readReal<float>(v, dst, k);
    case DType::kFloat64: return readReal<double>(v, dst, k);
    case DType::kBool: {
      int64_t x = 0;
      if (v.isBool()) x = v.boolean() ? 1 : 0;
      else if (!v.toInt64(&x) || (x != 0 && x != 1)) return false;
      static_cast<unsigned char*>(dst)[k] = static_cast<unsigned char>(x);
      return true;
    }
    case DType::kString:
      if (!v.isString()) return false;
      static_cast<std::string*>(dst)[k] = v.text();
      return true;
    default: return false;
  }
}

template <class T>
T at(const void* p, size_t k) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + k * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

Status readTensorData(const Value& list, const TensorSpec& spec, void* dst) {
  if (!list.isArray()) return invalidArgument("values of '" + spec.name() + "' are not a JSON list");
  if (list.items().size() != spec.elementCount())
    return invalidArgument("'" + spec.name() + "' needs " + std::to_string(spec.elementCount()) + " values, got " +
                           std::to_string(list.items().size()));
  for (size_t k = 0; k < list.items().size(); ++k)
    if (!readOne(list.items()[k], spec.type(), dst, k))
      return invalidArgument("value " + std::to_string(k) + " of '" + spec.name() + "' is not a valid " +
                             dtypeName(spec.type()));
  return Status::OK();
}

void appendTensorData(std::string& out, TensorRef t) {
  out += '[';
  const size_t n = t.spec->elementCount();
  for (size_t k = 0; k < n; ++k) {
    if (k) out += ',';
    switch (t.spec->type()) {
      case DType::kInt8: appendInt(out, at<int8_t>(t.data, k)); break;
      case DType::kUInt8: appendUInt(out, at<uint8_t>(t.data, k)); break;
      case DType::kInt16: appendInt(out, at<int16_t>(t.data, k)); break;
      case DType::kUInt16: appendUInt(out, at<uint16_t>(t.data, k)); break;
      case DType::kInt32: appendInt(out, at<int32_t>(t.data, k)); break;
      case DType::kUInt32: appendUInt(out, at<uint32_t>(t.data, k)); break;
      case DType::kInt64: appendInt(out, at<int64_t>(t.data, k)); break;
      case DType::kUInt64: appendUInt(out, at<uint64_t>(t.data, k)); break;
      case DType::kFloat32: appendFloat32(out, at<float>(t.data, k)); break;
      case DType::kFloat64: appendFloat64(out, at<double>(t.data, k)); break;
      case DType::kBool: out += at<uint8_t>(t.data, k) ? "true" : "false"; break;
      case DType::kString: appendString(out, static_cast<const std::string*>(t.data)[k]); break;
      default: break;
    }
  }
  out += ']';
}

void appendTensor(std::string& out, TensorRef t) {
  out += "{\"name\":";
  appendString(out, t.spec->name());
  out += ",\"type\":\"";
  out += dtypeName(t.spec->type());
  out += "\",\"shape\":[";
  for (size_t i = 0; i < t.spec->shape().size(); ++i) {
    if (i) out += ',';
    appendInt(out, t.spec->shape()[i]);
  }
  out += "],\"data\":";
  appendTensorData(out, t);
  out += '}';
}

}  // namespace json
}  // namespace mlbridge
