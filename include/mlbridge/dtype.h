// Element types. The numbering is the wire numbering (proto DType) and is
// frozen: values are only ever added.
#ifndef MLBRIDGE_DTYPE_H
#define MLBRIDGE_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace mlbridge {

enum class DType : int {
  kInvalid = 0,
  kFloat32 = 1,
  kFloat64 = 2,
  kInt8 = 3,
  kUInt8 = 4,
  kInt16 = 5,
  kUInt16 = 6,
  kInt32 = 7,
  kUInt32 = 8,
  kInt64 = 9,
  kUInt64 = 10,
  kBool = 11,    // one byte, 0 or 1
  kString = 12,  // std::string elements; json and protobuf only
};

// Bytes per element; 0 for kString and kInvalid.
size_t dtypeSize(DType t);
// LLVM's name: "float", "double", "int8_t", ..., "bool", "string".
const char* dtypeName(DType t);
// Accepts LLVM names and numpy aliases ("float32", "int64", ...); kInvalid if unknown.
DType parseDType(std::string_view name);
bool isFloating(DType t);
bool isInteger(DType t);  // signed or unsigned, not bool
bool isSigned(DType t);

namespace detail {
template <class T> struct DTypeOf { static constexpr DType value = DType::kInvalid; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kInt16; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kUInt16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kUInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kUInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };
template <> struct DTypeOf<std::string> { static constexpr DType value = DType::kString; };
// `long long` is a distinct type from int64_t (`long`) on LP64 Linux: map it
// too, but only where it is distinct (elsewhere it *is* int64_t).
struct NotLongLong {};
struct NotULongLong {};
using LongLongIfDistinct =
    std::conditional_t<std::is_same<long long, int64_t>::value, NotLongLong, long long>;
using ULongLongIfDistinct =
    std::conditional_t<std::is_same<unsigned long long, uint64_t>::value, NotULongLong,
                       unsigned long long>;
template <> struct DTypeOf<LongLongIfDistinct> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<ULongLongIfDistinct> { static constexpr DType value = DType::kUInt64; };
}  // namespace detail

// The DType of a C++ element type (kInvalid for unsupported types).
template <class T>
constexpr DType dtypeOf() { return detail::DTypeOf<std::remove_cv_t<T>>::value; }

}  // namespace mlbridge

#endif  // MLBRIDGE_DTYPE_H
