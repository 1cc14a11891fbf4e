// File: src/base/dtype.cc
#include "tessera/base/dtype.h"

namespace tessera {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
      return 1;
    case DType::kInt16:
      return 2;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kFloat64:
      return 8;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return "bool";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
  }
  return "?";
}

bool IsIntegral(DType dtype) { return !IsFloating(dtype); }
bool IsFloating(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat64; }

}  // namespace tessera
