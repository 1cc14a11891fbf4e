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
#include <tuple>
#include <type_traits>

namespace tessera {

enum class DType : uint8_t { kBool, kInt8, kUInt8, kInt16, kInt32, kInt64, kFloat32, kFloat64 };

size_t DTypeSize(DType dtype);
// "bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64".
std::string_view DTypeName(DType dtype);
bool IsIntegral(DType dtype);  // bool counts as integral.
bool IsFloating(DType dtype);

// The element type of each DType, in the enum's order.
template <DType D>
using DTypeElement =
    std::tuple_element_t<static_cast<size_t>(D), std::tuple<bool, int8_t, uint8_t, int16_t, int32_t,
                                                            int64_t, float, double>>;

// The DType whose element type is T (a compile error for any other T).
template <typename T, DType D = DType::kBool>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, DTypeElement<D>>) {
    return D;
  } else {
    static_assert(D != DType::kFloat64, "unsupported element type");
    return DTypeOf<T, static_cast<DType>(static_cast<int>(D) + 1)>();
  }
}

// f(T{}) for the element type T of `dtype`. A value outside the enum (which
// the readers of files and messages refuse) is visited as its bytes, uint8.
template <typename F>
decltype(auto) VisitDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kBool:
      return f(bool{});
    case DType::kInt8:
      return f(int8_t{});
    case DType::kUInt8:
      return f(uint8_t{});
    case DType::kInt16:
      return f(int16_t{});
    case DType::kInt32:
      return f(int32_t{});
    case DType::kInt64:
      return f(int64_t{});
    case DType::kFloat32:
      return f(float{});
    case DType::kFloat64:
      return f(double{});
  }
  return f(uint8_t{});
}

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_BASE_DTYPE_H_
