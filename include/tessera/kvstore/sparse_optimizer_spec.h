// File: include/tessera/kvstore/sparse_optimizer_spec.h
//
// The hyper-parameters of a sparse optimizer (SparseAdagrad / SparseAdam):
// what include/tessera/dist/embedding.h exposes and src/kvstore/sparse_optimizer.h
// applies where the rows live.
#ifndef TESSERA_INCLUDE_TESSERA_KVSTORE_SPARSE_OPTIMIZER_SPEC_H_
#define TESSERA_INCLUDE_TESSERA_KVSTORE_SPARSE_OPTIMIZER_SPEC_H_

namespace tessera::kvstore {

enum class SparseOptimizerKind { kAdagrad = 1, kAdam = 2 };

struct SparseOptimizerSpec {
  SparseOptimizerKind kind = SparseOptimizerKind::kAdagrad;
  double lr = 0.01;
  double eps = 1e-10;
  double beta1 = 0.9, beta2 = 0.999;  // Adam.
};

}  // namespace tessera::kvstore

#endif  // TESSERA_INCLUDE_TESSERA_KVSTORE_SPARSE_OPTIMIZER_SPEC_H_
