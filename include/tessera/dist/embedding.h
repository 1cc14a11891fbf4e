// File: include/tessera/dist/embedding.h
//
// Learnable node (or edge) embeddings stored like a DistTensor, trained with
// sparse optimizers (dgl.distributed.DistEmbedding, SparseAdagrad,
// SparseAdam):
//
//   tessera::dist::DistEmbedding emb(g.num_nodes(), 64, "node_emb");
//   tessera::dist::SparseAdam sparse_opt({emb}, 0.01);
//   for (const auto& batch : loader) {
//     torch::Tensor h = emb(batch.input_nodes);   // takes part in autograd
//     torch::Tensor loss = ...;
//     loss.backward();
//     sparse_opt.step();                          // updates only the rows used
//   }
//
// The update runs on the machine that owns the rows: the trainer sends each
// row's summed gradient there, and the row and its optimizer state change
// together under the row's lock (src/kvstore/sparse_optimizer.h). Updates
// from several trainers to one row are never lost, and a step costs one
// round trip per machine. As in DGL, each trainer's gradients are applied
// as they come (not averaged across trainers).
#ifndef TESSERA_INCLUDE_TESSERA_DIST_EMBEDDING_H_
#define TESSERA_INCLUDE_TESSERA_DIST_EMBEDDING_H_

#include <torch/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tessera/dist/dist_graph.h"
#include "tessera/dist/dist_tensor.h"
#include "tessera/kvstore/sparse_optimizer_spec.h"

namespace tessera::dist {

class DistEmbedding {
 public:
  // Creates (or attaches to) the persistent float32 tensor `name` of shape
  // [num_embeddings, embedding_dim]; num_embeddings is the number of nodes
  // or edges (policy as for DistTensor). Every trainer constructs it.
  // On a heterograph, `type` names the node type (relation) whose per-type
  // ids index it (DGL's DistEmbedding(..., part_policy=NodePartitionPolicy(
  // gpb, ntype)): learned features of a featureless type, as in R-GCN).
  DistEmbedding(int64_t num_embeddings, int64_t embedding_dim, const std::string& name,
                Init init = Init::Uniform(-1, 1), PartPolicy policy = PartPolicy::kAuto,
                const std::string& type = "");

  // Rows `ids` ([n, dim]). In training mode with gradients enabled the rows
  // require grad and the lookup is recorded for the next optimizer step.
  torch::Tensor forward(const torch::Tensor& ids);
  torch::Tensor operator()(const torch::Tensor& ids) { return forward(ids); }
  void train(bool on = true);
  void eval() { train(false); }

  const DistTensor& weight() const;
  int64_t num_embeddings() const;
  int64_t embedding_dim() const;
  const std::string& name() const;

  // Every row, to / from the checkpoint folder `path` (tessera/dist/checkpoint.h:
  // written in parallel by the machines, checksummed, reloadable on another
  // partitioning; `save` replaces a checkpoint there). Collective: every
  // trainer calls it; all return once it is done. `tessera export-embeddings`
  // turns the folder into .npy in the input's node order.
  void save(const std::string& path) const;
  void load(const std::string& path) const;

 private:
  friend class SparseOptimizer;
  struct State;
  std::shared_ptr<State> state_;
};

class SparseOptimizer {
 public:
  virtual ~SparseOptimizer() = default;
  // Applies the gradients of every lookup recorded since the last step
  // (duplicate ids summed) and forgets them. Lookups whose rows got no
  // gradient are dropped.
  void step();
  // Forgets the recorded lookups without applying them.
  void zero_grad();
  // The optimizer state of every embedding, to / from the checkpoint folder
  // `path`. Collective, like DistEmbedding::save.
  void save(const std::string& path) const;
  void load(const std::string& path) const;
  const kvstore::SparseOptimizerSpec& spec() const { return spec_; }
  // Every tensor it keeps: the embeddings' weights and their state.
  std::vector<DistTensor> tensors() const;

 protected:
  SparseOptimizer(std::vector<DistEmbedding> params, kvstore::SparseOptimizerSpec spec);

 private:
  std::vector<DistEmbedding> params_;
  kvstore::SparseOptimizerSpec spec_;
  std::vector<std::vector<DistTensor>> states_;  // Per embedding, SparseStateOf order.
};

// state_sum += g^2; w -= lr * g / (sqrt(state_sum) + eps), element-wise.
class SparseAdagrad : public SparseOptimizer {
 public:
  SparseAdagrad(std::vector<DistEmbedding> params, double lr, double eps = 1e-10);
};

// Adam with a step count per row (rows not looked up do not age).
class SparseAdam : public SparseOptimizer {
 public:
  SparseAdam(std::vector<DistEmbedding> params, double lr,
             std::pair<double, double> betas = {0.9, 0.999}, double eps = 1e-8);
};

}  // namespace tessera::dist

#endif  // TESSERA_INCLUDE_TESSERA_DIST_EMBEDDING_H_
