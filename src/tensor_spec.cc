#include "mlbridge/tensor_spec.h"

#include <limits>
#include <unordered_set>

#include "checked_math.h"
#include "json/json.h"

namespace mlbridge {

size_t TensorSpec::elementCount() const {
  size_t n = 1;
  for (int64_t d : shape_) n *= d < 0 ? 0 : static_cast<size_t>(d);
  return n;
}

Status TensorSpec::validate() const {
  if (name_.empty()) return invalidArgument("tensor spec has an empty name");
  if (type_ == DType::kInvalid || dtypeName(type_) == std::string("invalid"))
    return invalidArgument("tensor '" + name_ + "' has an invalid dtype");
  for (int64_t d : shape_)
    if (d < 0) return invalidArgument("tensor '" + name_ + "' has a negative dimension in shape " + shapeToString(shape_));
  // Refuse sizes that overflow or cannot be allocated (1 TiB elements).
  size_t n;
  if (!checked::elementCount(shape_.data(), shape_.size(), 1, uint64_t(1) << 40, &n))
    return invalidArgument("tensor '" + name_ + "' is too large: shape " + shapeToString(shape_));
  return Status::OK();
}

void TensorSpec::appendJSON(std::string& out) const {
  out += "{\"name\":";
  json::appendString(out, name_);
  out += ",\"type\":\"";
  out += dtypeName(type_);
  out += "\",\"port\":";
  out += std::to_string(port_);
  out += ",\"shape\":[";
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(shape_[i]);
  }
  out += "]}";
}

std::string TensorSpec::toJSON() const {
  std::string out;
  appendJSON(out);
  return out;
}

StatusOr<TensorSpec> TensorSpec::fromJSON(std::string_view text) {
  StatusOr<json::Value> parsed = json::parse(text);
  if (!parsed.ok()) return parsed.status();
  return fromJSONValue(*parsed);
}

StatusOr<TensorSpec> TensorSpec::fromJSONValue(const json::Value& v) {
  if (!v.isObject()) return dataLoss("tensor spec is not a JSON object");
  const json::Value* name = v.find("name");
  const json::Value* type = v.find("type");
  const json::Value* shape = v.find("shape");
  const json::Value* port = v.find("port");
  if (!name || !name->isString()) return dataLoss("tensor spec has no string \"name\"");
  if (!type || !type->isString()) return dataLoss("tensor spec '" + name->text() + "' has no string \"type\"");
  if (!shape || !shape->isArray()) return dataLoss("tensor spec '" + name->text() + "' has no \"shape\" array");
  DType dt = parseDType(type->text());
  if (dt == DType::kInvalid)
    return invalidArgument("tensor spec '" + name->text() + "' has unknown type \"" + type->text() + "\"");
  std::vector<int64_t> dims;
  dims.reserve(shape->items().size());
  for (const json::Value& d : shape->items()) {
    int64_t x = 0;
    if (!d.toInt64(&x)) return dataLoss("tensor spec '" + name->text() + "' has a non-integer dimension");
    dims.push_back(x);
  }
  int64_t p = 0;
  if (port && !port->toInt64(&p)) return dataLoss("tensor spec '" + name->text() + "' has a bad port");
  if (p < 0 || p > std::numeric_limits<int>::max()) return dataLoss("tensor spec '" + name->text() + "' has a bad port");
  TensorSpec spec(name->text(), dt, std::move(dims), static_cast<int>(p));
  MLBRIDGE_RETURN_IF_ERROR(spec.validate());
  return spec;
}

std::string shapeToString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Status validateSpecs(const std::vector<TensorSpec>& specs, const char* what) {
  std::unordered_set<std::string> seen;
  for (const TensorSpec& s : specs) {
    Status st = s.validate();
    if (!st.ok()) return Status(st.code(), std::string(what) + ": " + st.message());
    if (!seen.insert(s.name()).second)
      return invalidArgument(std::string("duplicate ") + what + " name '" + s.name() + "'");
  }
  return Status::OK();
}

}  // namespace mlbridge
