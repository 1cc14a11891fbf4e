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

inline torch::Dtype ToTorch(DType dtype) {
  return VisitDType(dtype, [](auto v) { return c10::CppTypeToScalarType<decltype(v)>::value; });
}

// Throws Error naming `what` for dtypes tessera does not store.
inline DType ToDType(torch::Dtype dtype, const std::string& what = "DistTensor") {
  for (int d = 0; d <= static_cast<int>(DType::kFloat64); ++d) {
    if (ToTorch(static_cast<DType>(d)) == dtype) return static_cast<DType>(d);
  }
  throw Error(fmt::format("dtype {} is not supported by {}", c10::toString(dtype), what));
}

}  // namespace tessera::dist

#endif  // TESSERA_SRC_DIST_TORCH_DTYPE_H_
