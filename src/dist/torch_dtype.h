// File: src/dist/torch_dtype.h
//
// torch dtypes <-> tessera's array dtypes (the ones DistTensors, partitions and
// the wire carry), for the trainer API and the Python module. Both include
// LibTorch already; header-only so the Python module needs no extra symbol.
#ifndef TESSERA_SRC_DIST_TORCH_DTYPE_H_
#define TESSERA_SRC_DIST_TORCH_DTYPE_H_

#include <torch/types.h>

#include <string>

#include "fmt/format.h"
#include "tessera/dist.h"
#include "tessera/graph/array.h"

namespace tessera::dist {

// Throws Error naming `what` for dtypes tessera does not store.
inline DType ToDType(torch::Dtype dtype, const std::string& what = "DistTensor") {
  switch (dtype) {
    case torch::kBool:
      return DType::kBool;
    case torch::kInt8:
      return DType::kInt8;
    case torch::kUInt8:
      return DType::kUInt8;
    case torch::kInt16:
      return DType::kInt16;
    case torch::kInt32:
      return DType::kInt32;
    case torch::kInt64:
      return DType::kInt64;
    case torch::kFloat32:
      return DType::kFloat32;
    case torch::kFloat64:
      return DType::kFloat64;
    default:
      throw Error(fmt::format("dtype {} is not supported by {}", c10::toString(dtype), what));
  }
}

inline torch::Dtype ToTorch(DType dtype) {
  return VisitDType(dtype, [](auto v) { return c10::CppTypeToScalarType<decltype(v)>::value; });
}

}  // namespace tessera::dist

#endif  // TESSERA_SRC_DIST_TORCH_DTYPE_H_
