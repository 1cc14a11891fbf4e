// File: src/base/dtype.cc
#include "tessera/base/dtype.h"

namespace tessera {

namespace {
bool Valid(DType dtype) {
  return static_cast<uint8_t>(dtype) <= static_cast<uint8_t>(DType::kFloat64);
}
}  // namespace

size_t DTypeSize(DType dtype) {
  return Valid(dtype) ? VisitDType(dtype, [](auto v) { return sizeof(v); }) : 0;
}

std::string_view DTypeName(DType dtype) {
  static constexpr std::string_view kNames[] = {"bool",  "int8",  "uint8",   "int16",
                                                "int32", "int64", "float32", "float64"};
  return Valid(dtype) ? kNames[static_cast<size_t>(dtype)] : "?";
}

bool IsIntegral(DType dtype) { return !IsFloating(dtype); }
bool IsFloating(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat64; }

}  // namespace tessera
