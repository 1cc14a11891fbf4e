// File: src/kvstore/sparse_optimizer.h
//
// Sparse optimizers applied where the rows live. A trainer sends the
// gradient rows of an embedding (distinct ids, summed per id) to the machine
// that owns them; that machine updates each row and its optimizer state
// under the row's lock, in one step. Concurrent updates from several
// trainers or servers to the same row never lose one another (no
// pull-modify-push race, as in DGL PR #3561) and cost one round trip.
//
// The state of embedding "node/emb" lives in tensors of the same policy
// named by StateKey(): "node/emb.adagrad_sum" (Adagrad), "node/emb.adam_m",
// "node/emb.adam_v", "node/emb.adam_step" (Adam, one step count per row).
#ifndef TESSERA_SRC_KVSTORE_SPARSE_OPTIMIZER_H_
#define TESSERA_SRC_KVSTORE_SPARSE_OPTIMIZER_H_

#include <span>
#include <string>
#include <vector>

#include "src/kvstore/shard_map.h"
#include "tessera/base/status.h"
#include "tessera/kvstore/sparse_optimizer_spec.h"

namespace tessera::kvstore {

// InvalidArgument naming the bad hyper-parameter.
Status ValidateSparseSpec(const SparseOptimizerSpec& spec);

struct StateTensor {
  std::string suffix;  // ".adam_m"
  int64_t width;       // float32 values per row.
};
// The state tensors `kind` keeps for an embedding of `dim` columns.
std::vector<StateTensor> SparseStateOf(SparseOptimizerKind kind, int64_t dim);
std::string StateKey(const std::string& embedding_key, const StateTensor& state);

// Updates one row in place: row and state[k] point at that row of the
// embedding and of each state tensor (SparseStateOf order).
void SparseUpdateRow(const SparseOptimizerSpec& spec, float* row, float* const* state,
                     const float* grad, int64_t dim);

// Applies gradient rows `grads` ([ids.size(), dim] float32) to rows `ids`
// (global ids, all owned by this machine) of `key` in `shards`, under the
// catalog's row locks. Checks the embedding and its state tensors.
Status ApplySparseUpdate(ShardMap& shards, const std::string& key, std::span<const int64_t> ids,
                         int64_t first_id, const float* grads, int64_t grad_width,
                         const SparseOptimizerSpec& spec);

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_SPARSE_OPTIMIZER_H_
