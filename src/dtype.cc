#include "mlbridge/dtype.h"

namespace mlbridge {

namespace {
struct DTypeInfo {
  DType type;
  const char* llvmName;
  const char* alias;  // numpy's name
  size_t size;
};
constexpr DTypeInfo kInfo[] = {
    {DType::kFloat32, "float", "float32", 4},   {DType::kFloat64, "double", "float64", 8},
    {DType::kInt8, "int8_t", "int8", 1},        {DType::kUInt8, "uint8_t", "uint8", 1},
    {DType::kInt16, "int16_t", "int16", 2},     {DType::kUInt16, "uint16_t", "uint16", 2},
    {DType::kInt32, "int32_t", "int32", 4},     {DType::kUInt32, "uint32_t", "uint32", 4},
    {DType::kInt64, "int64_t", "int64", 8},     {DType::kUInt64, "uint64_t", "uint64", 8},
    {DType::kBool, "bool", "bool_", 1},         {DType::kString, "string", "str", 0},
};

const DTypeInfo* info(DType t) {
  for (const DTypeInfo& i : kInfo)
    if (i.type == t) return &i;
  return nullptr;
}
}  // namespace

size_t dtypeSize(DType t) {
  const DTypeInfo* i = info(t);
  return i ? i->size : 0;
}

const char* dtypeName(DType t) {
  const DTypeInfo* i = info(t);
  return i ? i->llvmName : "invalid";
}

DType parseDType(std::string_view name) {
  for (const DTypeInfo& i : kInfo)
    if (name == i.llvmName || name == i.alias) return i.type;
  return DType::kInvalid;
}

bool isFloating(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }

bool isInteger(DType t) {
  switch (t) {
    case DType::kInt8: case DType::kUInt8: case DType::kInt16: case DType::kUInt16:
    case DType::kInt32: case DType::kUInt32: case DType::kInt64: case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

bool isSigned(DType t) {
  return t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64 || isFloating(t);
}

}  // namespace mlbridge
