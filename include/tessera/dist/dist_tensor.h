// File: include/tessera/dist/dist_tensor.h
//
// DistTensor (dgl.distributed.DistTensor): a tensor whose rows are sharded
// over the machines like the graph's nodes or edges.
#ifndef TESSERA_INCLUDE_TESSERA_DIST_DIST_TENSOR_H_
#define TESSERA_INCLUDE_TESSERA_DIST_DIST_TENSOR_H_

#include <torch/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tessera/dist/context.h"

namespace tessera {
namespace dist {

enum class PartPolicy { kAuto, kNode, kEdge };

// How a new DistTensor is filled. Values depend only on the seed and the
// element's global index, never on the number of partitions.
struct Init {
  enum Kind { kZeros, kUniform, kNormal } kind = kZeros;
  double a = 0, b = 1;
  uint64_t seed = 0;
  static Init Zeros() { return {}; }
  static Init Uniform(double low, double high, uint64_t seed = 0) {
    return {kUniform, low, high, seed};
  }
  static Init Normal(double mean, double stddev, uint64_t seed = 0) {
    return {kNormal, mean, stddev, seed};
  }
};

// A tensor whose rows are sharded over the machines like the nodes (or the
// edges) of the graph. Copies share the same tensor.
class DistTensor {
 public:
  // Creates (or, if a tensor of that name, dtype and shape exists, attaches
  // to) a tensor on every machine. shape[0] must be the number of nodes or
  // edges; kAuto picks whichever matches (Error if both or neither do). An
  // empty name makes an anonymous tensor (every trainer must then create its
  // anonymous tensors in the same order). A non-persistent tensor is deleted
  // cluster-wide when the last copy of the handle that created it goes.
  //
  // Heterogeneous graphs (DGL's NodePartitionPolicy(gpb, ntype) /
  // EdgePartitionPolicy(gpb, etype)): `type` names the node type or relation
  // (a relation name or canonical "src:rel:dst") whose per-type ids address
  // the rows; shape[0] must be that type's count. Empty: the graph's only
  // type, or (kAuto) the one type whose count is shape[0] (Error if several).
  DistTensor(std::vector<int64_t> shape, torch::Dtype dtype, std::string name = "",
             Init init = Init::Zeros(), PartPolicy policy = PartPolicy::kAuto,
             bool persistent = false, const std::string& type = "");

  // Rows `ids` (any integer tensor of global ids), in order: [n, shape[1:]...].
  torch::Tensor operator[](const torch::Tensor& ids) const;
  // Writes rows (dtype and row shape of this tensor); visible to every
  // trainer's later reads once this returns.
  void set(const torch::Tensor& ids, const torch::Tensor& rows) const;
  // Adds rows element-wise (atomic per row against concurrent writers).
  void add(const torch::Tensor& ids, const torch::Tensor& rows) const;
  // All three throw Error, naming both row layouts, on a handle whose tensor
  // was deleted and created again with another dtype or row shape since the
  // handle was made (and naming the tensor if it was deleted).

  const std::vector<int64_t>& shape() const;
  torch::Dtype dtype() const;
  const std::string& name() const;
  PartPolicy part_policy() const;
  // The node type or canonical relation of its rows ("_N" / "_N:_E:_N" on a
  // homogeneous graph).
  const std::string& type_name() const;
  // "node/<name>" or "edge/<name>" ("node/<ntype>/<name>" on a heterograph).
  const std::string& key() const;
  // Whether this handle's construction created the tensor (exactly one of the
  // trainers constructing it at once does), rather than attaching to it.
  bool created() const;
  // Deletes the tensor on every machine now, persistent or not (for a
  // construction that failed half way); its handles then fail as after any
  // deletion, and constructing it again creates it anew. Throws Error if
  // the tensor is already gone or a server cannot be reached.
  void Delete() const;
  // The ids [first, end) of the rows partition `part` owns (Error if there
  // is no such partition).
  std::pair<int64_t, int64_t> id_range(int part) const;
  // DGL's local_partition: this machine's rows, id_range(this machine's
  // partition), as a tensor over the store's own memory (shared memory;
  // standalone, the process's copy). Writes through it change the tensor
  // for every trainer at once, without the row locks set() and add() take;
  // the tensor keeps the memory mapped after the DistTensor is deleted.
  torch::Tensor local_partition() const;
  kvstore::Services& store() const;  // For embeddings and optimizers.

 private:
  friend class DistGraph;
  struct State;
  explicit DistTensor(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace dist
}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_DIST_DIST_TENSOR_H_
