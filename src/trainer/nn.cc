// File: src/trainer/nn.cc
//
// SAGEConv and SAGE (include/tessera/nn.h).
#include "include/tessera/nn.h"

#include <torch/nn/functional/activation.h>

#include "fmt/format.h"
#include "include/tessera/parallel.h"
#include "spdlog/spdlog.h"
#include "src/base/time.h"

namespace tessera::nn {

torch::Tensor mean_aggregate(const dist::Block& block, const torch::Tensor& h_src) {
  if (h_src.size(0) != block.num_src_nodes()) {
    throw dist::Error(fmt::format("mean_aggregate: {} source rows for a block of {} sources",
                                  h_src.size(0), block.num_src_nodes()));
  }
  const int64_t num_dst = block.num_dst_nodes();
  torch::Tensor degrees = (block.indptr.slice(0, 1) - block.indptr.slice(0, 0, -1))
                              .clamp_min(1)
                              .to(h_src.scalar_type())
                              .unsqueeze(1);
  torch::Tensor sum = torch::zeros({num_dst, h_src.size(1)}, h_src.options())
                          .index_add(0, block.edge_dst(), h_src.index_select(0, block.indices));
  return sum / degrees;
}

SAGEConvImpl::SAGEConvImpl(int64_t in_feats, int64_t out_feats)
    : in_feats_(in_feats), out_feats_(out_feats) {
  fc_self_ = register_module("fc_self", torch::nn::Linear(in_feats, out_feats));
  fc_neigh_ = register_module(
      "fc_neigh", torch::nn::Linear(torch::nn::LinearOptions(in_feats, out_feats).bias(false)));
}

torch::Tensor SAGEConvImpl::forward(const dist::Block& block, const torch::Tensor& h_src) {
  if (h_src.dim() != 2 || h_src.size(1) != in_feats_) {
    throw dist::Error(fmt::format("SAGEConv({} -> {}): input of shape {}", in_feats_,
                                  out_feats_, fmt::join(h_src.sizes(), "x")));
  }
  torch::Tensor h_dst = h_src.slice(0, 0, block.num_dst_nodes());
  // Aggregate the narrower side: project first when that shrinks the rows
  // that travel along the edges (as DGL does).
  torch::Tensor neigh = in_feats_ > out_feats_ ? mean_aggregate(block, fc_neigh_(h_src))
                                               : fc_neigh_(mean_aggregate(block, h_src));
  return fc_self_(h_dst) + neigh;
}

SAGEImpl::SAGEImpl(int64_t in_feats, int64_t hidden, int64_t out_feats, int num_layers,
                   double dropout, double input_dropout) {
  if (num_layers < 1) throw dist::Error("SAGE: num_layers must be at least 1");
  for (int l = 0; l < num_layers; ++l) {
    int64_t in = l == 0 ? in_feats : hidden;
    int64_t out = l == num_layers - 1 ? out_feats : hidden;
    layers_.push_back(register_module(fmt::format("layer{}", l), SAGEConv(in, out)));
  }
  dropout_ = register_module("dropout", torch::nn::Dropout(dropout));
  input_dropout_ = register_module("input_dropout", torch::nn::Dropout(input_dropout));
}

torch::Tensor SAGEImpl::forward_layer(int l, const dist::Block& block, const torch::Tensor& h) {
  torch::Tensor out = layers_.at(static_cast<size_t>(l))->forward(block, h);
  if (l + 1 < num_layers()) out = dropout_(torch::relu(out));
  return out;
}

torch::Tensor SAGEImpl::forward(const std::vector<dist::Block>& blocks, const torch::Tensor& x) {
  if (static_cast<int>(blocks.size()) != num_layers()) {
    throw dist::Error(fmt::format("SAGE: {} blocks for {} layers (one fanout per layer)",
                                  blocks.size(), num_layers()));
  }
  torch::Tensor h = input_dropout_->options.p() > 0 ? input_dropout_(x) : x;
  for (int l = 0; l < num_layers(); ++l) h = forward_layer(l, blocks[static_cast<size_t>(l)], h);
  return h;
}

dist::DistTensor SAGEImpl::inference(const dist::DistGraph& g, const dist::DistTensor& x,
                                     int64_t batch_size) {
  torch::NoGradGuard no_grad;
  bool was_training = is_training();
  eval();
  const int64_t call = inference_calls_++;
  torch::Tensor nodes = dist::node_split(torch::ones({g.num_nodes()}, torch::kBool),
                                         g.partition_book());
  dist::DistTensor input = x;
  std::optional<dist::DistTensor> output;
  for (int l = 0; l < num_layers(); ++l) {
    Stopwatch watch;
    const int64_t width = layers_[static_cast<size_t>(l)]->out_feats();
    // Names every trainer derives alike; unique per call so that a tensor of
    // an earlier call still being dropped elsewhere is never attached to.
    output.emplace(std::vector<int64_t>{g.num_nodes(), width}, torch::kFloat32,
                   fmt::format("tessera.inference.{}.{}", call, l));
    dist::DistNodeDataLoader loader(g, nodes, dist::NeighborSampler{.fanouts = {-1}},
                                    {.batch_size = batch_size});
    for (const dist::MiniBatch& batch : loader) {
      torch::Tensor h = input[batch.input_nodes];
      if (h.scalar_type() != torch::kFloat32) h = h.to(torch::kFloat32);
      output->set(batch.seeds, forward_layer(l, batch.blocks[0], h));
    }
    g.barrier();
    spdlog::info("inference: layer {} of {} ({} of {} nodes here) in {:.2f} s", l + 1,
                 num_layers(), nodes.size(0), g.num_nodes(), watch.Seconds());
    input = *output;
  }
  train(was_training);
  return *output;
}

}  // namespace tessera::nn
