// File: include/tessera/base/dtype.h
//
// DType: the element type of an array, on disk (.npy), in memory (Array), on
// the wire (rpc) and in shared memory (shm). It lives in base so that the
// transport layers depend on nothing above it.
#ifndef TESSERA_INCLUDE_TESSERA_BASE_DTYPE_H_
#define TESSERA_INCLUDE_TESSERA_BASE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace tessera {

enum class DType : uint8_t { kBool, kInt8, kUInt8, kInt16, kInt32, kInt64, kFloat32, kFloat64 };

size_t DTypeSize(DType dtype);
// "bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64".
std::string_view DTypeName(DType dtype);
bool IsIntegral(DType dtype);  // bool counts as integral.
bool IsFloating(DType dtype);

template <typename T>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, bool>)
    return DType::kBool;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::kInt8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::kUInt8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::kInt64;
  else if constexpr (std::is_same_v<T, float>)
    return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::kFloat64;
  else
    static_assert(sizeof(T) == 0, "unsupported element type");
}

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_BASE_DTYPE_H_
