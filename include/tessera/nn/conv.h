// File: include/tessera/nn/conv.h
//
// GNN layers over the loaders' Blocks, as ordinary torch::nn modules:
//
//   tessera::nn::SAGE model(in_feats, 256, num_classes, /*layers=*/2, /*dropout=*/0.5);
//   for (const auto& batch : loader) {
//     torch::Tensor x = g.ndata("feat")[batch.input_nodes[0]];
//     torch::Tensor logits = model->forward(batch.blocks, x);  // [seeds, classes]
//   }
//   // Evaluation: every node's output, one layer at a time over all neighbours.
//   tessera::dist::DistTensor y = model->inference(g, g.ndata("feat"), 10000);
#ifndef TESSERA_INCLUDE_TESSERA_NN_CONV_H_
#define TESSERA_INCLUDE_TESSERA_NN_CONV_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <vector>

#include "tessera/dist.h"

namespace tessera::nn {

// The in-edge mean of source rows per destination of `block`:
// out[d] = mean of h_src[s] over the block's edges s -> d (zero without
// edges). h_src has block.num_src_nodes() rows.
torch::Tensor mean_aggregate(const dist::Block& block, const torch::Tensor& h_src);

// GraphSAGE convolution with the mean aggregator (DGL's SAGEConv 'mean'):
// h_dst' = W_self h_dst + W_neigh mean(h_src over in-edges) + b.
class SAGEConvImpl : public torch::nn::Module {
 public:
  SAGEConvImpl(int64_t in_feats, int64_t out_feats);
  // h_src: [block.num_src_nodes(), in_feats]; the first num_dst rows are the
  // destinations' own features. Returns [block.num_dst_nodes(), out_feats].
  torch::Tensor forward(const dist::Block& block, const torch::Tensor& h_src);
  int64_t in_feats() const { return in_feats_; }
  int64_t out_feats() const { return out_feats_; }

  // The layer in two halves, for inference: project(h) = [W_self h + b,
  // W_neigh h] per node ([n, 2 * out_feats]), and combine(block, p) =
  // p_dst[:, :out] + mean(p_src[:, out:]) = forward(block, h). Storing the
  // projection instead of h is smaller when in_feats > 2 * out_feats.
  torch::Tensor project(const torch::Tensor& h);
  torch::Tensor combine(const dist::Block& block, const torch::Tensor& projected_src);

 private:
  int64_t in_feats_, out_feats_;
  torch::nn::Linear fc_self_{nullptr}, fc_neigh_{nullptr};
};
TORCH_MODULE(SAGEConv);

// A stack of SAGEConv layers with ReLU and dropout between them (DGL's
// distributed GraphSAGE example); optionally dropout on the input features
// too (DGL's full-graph GraphSAGE example; it helps on sparse bag-of-words
// features such as Cora's).
class SAGEImpl : public torch::nn::Module {
 public:
  SAGEImpl(int64_t in_feats, int64_t hidden, int64_t out_feats, int num_layers, double dropout,
           double input_dropout = 0);
  // blocks: one per layer, input layer first (a MiniBatch's blocks).
  torch::Tensor forward(const std::vector<dist::Block>& blocks, const torch::Tensor& x);
  // Layer `l` alone, with its activation and dropout when it is not the last.
  torch::Tensor forward_layer(int l, const dist::Block& block, const torch::Tensor& h);
  // The activation and dropout that follow layer `l` (none after the last).
  torch::Tensor activate(int l, const torch::Tensor& out);

  // Every node's output, computed layer by layer over all in-neighbours
  // (no sampling): each trainer computes its node_split share of a layer into
  // a DistTensor, then all trainers move to the next layer. When the next
  // layer narrows (in > 2 * out) the stored rows are its projection rather
  // than the layer's output, so the next layer gathers fewer bytes per
  // edge. A collective: every trainer calls it. Runs under NoGradGuard in
  // eval mode.
  dist::DistTensor inference(const dist::DistGraph& g, const dist::DistTensor& x,
                             int64_t batch_size);
  int num_layers() const { return static_cast<int>(layers_.size()); }
  int64_t out_feats() const { return layers_.back()->out_feats(); }

 private:
  std::vector<SAGEConv> layers_;
  torch::nn::Dropout dropout_{nullptr}, input_dropout_{nullptr};
  int64_t inference_calls_ = 0;
};
TORCH_MODULE(SAGE);

// ---------------------------------------------------------------- R-GCN

// The relation of every edge of a block (DGL's block.edata[dgl.ETYPE]):
// int64 [num_edges], relation ids of `g`'s partition book.
torch::Tensor block_etypes(const dist::DistGraph& g, const dist::Block& block);

// DGL's RelGraphConv with the basis regulariser and a self loop (Schlichtkrull
// et al.): h_dst' = sum over in-edges e = (s -> d) of relation r of
// norm_e * W_r h_src[s] + W_self h_dst + b, where W_r = sum_k coeff[r, k] V_k
// (num_bases in [1, num_rels); num_bases <= 0 or >= num_rels gives every
// relation its own weight) and norm_e = 1 / (d's in-edges of relation r), the
// per-relation mean of DGL's entity-classification example.
class RelGraphConvImpl : public torch::nn::Module {
 public:
  RelGraphConvImpl(int64_t in_feats, int64_t out_feats, int64_t num_rels, int64_t num_bases = -1,
                   bool self_loop = true, bool bias = true);
  // h_src: [block.num_src_nodes(), in_feats] (destinations first); etypes:
  // int64 [block.num_edges()] in [0, num_rels). Returns [num_dst, out_feats].
  torch::Tensor forward(const dist::Block& block, const torch::Tensor& h_src,
                        const torch::Tensor& etypes);
  // The same layer over a typed block (DGL's RelGraphConv on a heterograph
  // block): h_src[t] are type t's source features
  // [block.src_nodes[t].size(0), in_feats]; relation r of the block uses
  // W_r. Returns every type's destination outputs [num_dst(t), out_feats]
  // (the self loop and bias only for a type with no in-edges).
  std::vector<torch::Tensor> forward(const dist::Block& block,
                                     const std::vector<torch::Tensor>& h_src);
  // The weight of every relation, [num_rels, in_feats, out_feats].
  torch::Tensor relation_weights() const;
  int64_t in_feats() const { return in_feats_; }
  int64_t out_feats() const { return out_feats_; }

 private:
  int64_t in_feats_, out_feats_, num_rels_, num_bases_;
  torch::Tensor bases_;  // [num_bases, in, out]
  torch::Tensor coeff_;  // [num_rels, num_bases]; identity without a regulariser.
  torch::Tensor bias_;   // [out] or undefined.
  torch::nn::Linear self_loop_{nullptr};
};
TORCH_MODULE(RelGraphConv);

// R-GCN for node classification (DGL's distributed entity-classification
// model): RelGraphConv layers with ReLU and dropout between them.
class RGCNImpl : public torch::nn::Module {
 public:
  RGCNImpl(int64_t in_feats, int64_t hidden, int64_t out_feats, int64_t num_rels, int64_t num_bases,
           int num_layers, double dropout);
  // blocks and their edge relations (block_etypes), input layer first.
  torch::Tensor forward(const std::vector<dist::Block>& blocks,
                        const std::vector<torch::Tensor>& etypes, const torch::Tensor& x);
  // Over typed blocks (a DistNodeDataLoader's with typed seeds): x[t] are
  // type t's input features (blocks.front().src_nodes[t]); returns the last
  // block's destination outputs per type.
  std::vector<torch::Tensor> forward(const std::vector<dist::Block>& blocks,
                                     std::vector<torch::Tensor> x);
  int num_layers() const { return static_cast<int>(layers_.size()); }

 private:
  std::vector<RelGraphConv> layers_;
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(RGCN);

}  // namespace tessera::nn

#endif  // TESSERA_INCLUDE_TESSERA_NN_CONV_H_
