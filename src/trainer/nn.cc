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
    throw dist::Error(fmt::format("SAGEConv({} -> {}): input of shape {}", in_feats_, out_feats_,
                                  fmt::join(h_src.sizes(), "x")));
  }
  torch::Tensor h_dst = h_src.slice(0, 0, block.num_dst_nodes());
  // Aggregate the narrower side: project first when that shrinks the rows
  // that travel along the edges (as DGL does).
  torch::Tensor neigh = in_feats_ > out_feats_ ? mean_aggregate(block, fc_neigh_(h_src))
                                               : fc_neigh_(mean_aggregate(block, h_src));
  return fc_self_(h_dst) + neigh;
}

torch::Tensor SAGEConvImpl::project(const torch::Tensor& h) {
  return torch::cat({fc_self_(h), fc_neigh_(h)}, 1);
}

torch::Tensor SAGEConvImpl::combine(const dist::Block& block, const torch::Tensor& projected_src) {
  if (projected_src.dim() != 2 || projected_src.size(1) != 2 * out_feats_) {
    throw dist::Error(fmt::format("SAGEConv({} -> {}): a projection has {} columns, not {}",
                                  in_feats_, out_feats_, projected_src.size(1), 2 * out_feats_));
  }
  torch::Tensor self = projected_src.slice(0, 0, block.num_dst_nodes()).slice(1, 0, out_feats_);
  return self + mean_aggregate(block, projected_src.slice(1, out_feats_).contiguous());
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

torch::Tensor SAGEImpl::activate(int l, const torch::Tensor& out) {
  return l + 1 < num_layers() ? dropout_(torch::relu(out)) : out;
}

torch::Tensor SAGEImpl::forward_layer(int l, const dist::Block& block, const torch::Tensor& h) {
  return activate(l, layers_.at(static_cast<size_t>(l))->forward(block, h));
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
  // Trainer r of W computes nodes [N r / W, N (r + 1) / W). Global ids are
  // contiguous per partition and ranks go machine by machine, so that is
  // (about) its own machine's nodes: the rows it writes are mostly local.
  auto ctx = dist::initialize();
  const int64_t n = g.num_nodes(), rank = ctx->rank(), world = ctx->world_size();
  torch::Tensor nodes = torch::arange(n * rank / world, n * (rank + 1) / world);
  dist::DistTensor input = x;
  std::optional<dist::DistTensor> output;
  bool input_projected = false;  // `input` holds layer l's projection, not its input.
  for (int l = 0; l < num_layers(); ++l) {
    Stopwatch watch;
    SAGEConv layer = layers_[static_cast<size_t>(l)];
    SAGEConv next = l + 1 < num_layers() ? layers_[static_cast<size_t>(l + 1)] : nullptr;
    const bool store_projection = next && next->in_feats() > 2 * next->out_feats();
    const int64_t width = store_projection ? 2 * next->out_feats() : layer->out_feats();
    // Names every trainer derives alike; unique per call so that a tensor of
    // an earlier call still being dropped elsewhere is never attached to.
    output.emplace(std::vector<int64_t>{g.num_nodes(), width}, torch::kFloat32,
                   fmt::format("tessera.inference.{}.{}", call, l));
    dist::DistNodeDataLoader loader(g, nodes, dist::NeighborSampler{.fanouts = {-1}},
                                    {.batch_size = batch_size});
    for (const dist::MiniBatch& batch : loader) {
      torch::Tensor h = input[batch.input_nodes];
      if (h.scalar_type() != torch::kFloat32) h = h.to(torch::kFloat32);
      const dist::Block& block = batch.blocks[0];
      torch::Tensor y =
          input_projected ? activate(l, layer->combine(block, h)) : forward_layer(l, block, h);
      output->set(batch.seeds, store_projection ? next->project(y) : y);
    }
    input_projected = store_projection;
    g.barrier();
    spdlog::info("inference: layer {} of {} ({} of {} nodes here) in {:.2f} s", l + 1, num_layers(),
                 nodes.size(0), g.num_nodes(), watch.Seconds());
    input = *output;
  }
  train(was_training);
  return *output;
}

}  // namespace tessera::nn
