// File: src/nn/conv.cc
//
// SAGEConv and SAGE, RelGraphConv and RGCN (include/tessera/nn/conv.h).
#include "tessera/nn/conv.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/init.h>

#include <cmath>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "tessera/base/time.h"
#include "tessera/dist/parallel.h"
#include "tessera/nn/aggregate.h"

namespace tessera::nn {

torch::Tensor mean_aggregate(const dist::Block& block, const torch::Tensor& h_src) {
  if (h_src.size(0) != block.num_src_nodes()) {
    throw dist::Error(fmt::format("mean_aggregate: {} source rows for a block of {} sources",
                                  h_src.size(0), block.num_src_nodes()));
  }
  const dist::Block::Relation& e = block.edges_of();
  return aggregate(e.indptr, e.indices, h_src, Reduce::kMean);
}

namespace {

// DGL's initialisation of a layer's weight: Xavier-uniform with ReLU gain
// (a bias keeps nn.Linear's, as in DGL's SAGEConv).
void InitLinear(torch::nn::Linear& fc) {
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(fc->weight, std::sqrt(2.0));
}

// The module's dropout (its p, in its train/eval mode) by tessera's kernel.
torch::Tensor Drop(const torch::nn::Dropout& d, const torch::Tensor& x) {
  return tessera::nn::dropout(x, d->options.p(), d->is_training());
}

}  // namespace

SAGEConvImpl::SAGEConvImpl(int64_t in_feats, int64_t out_feats)
    : in_feats_(in_feats), out_feats_(out_feats) {
  fc_self_ = register_module("fc_self", torch::nn::Linear(in_feats, out_feats));
  fc_neigh_ = register_module(
      "fc_neigh", torch::nn::Linear(torch::nn::LinearOptions(in_feats, out_feats).bias(false)));
  InitLinear(fc_self_);
  InitLinear(fc_neigh_);
}

torch::Tensor SAGEConvImpl::forward(const dist::Block& block, const torch::Tensor& h_src) {
  if (h_src.dim() != 2 || h_src.size(1) != in_feats_) {
    throw dist::Error(fmt::format("SAGEConv({} -> {}): input of shape {}", in_feats_, out_feats_,
                                  fmt::join(h_src.sizes(), "x")));
  }
  torch::Tensor h_dst = h_src.slice(0, 0, block.num_dst_nodes());
  // Aggregate the narrower side: project first when that shrinks the rows
  // that travel along the edges (as DGL does).
  auto neigh_fc = [&](const torch::Tensor& x) { return narrow_linear(x, fc_neigh_->weight); };
  torch::Tensor neigh = in_feats_ > out_feats_ ? mean_aggregate(block, neigh_fc(h_src))
                                               : neigh_fc(mean_aggregate(block, h_src));
  return narrow_linear(h_dst, fc_self_->weight, fc_self_->bias) + neigh;
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
  return l + 1 < num_layers() ? Drop(dropout_, torch::relu(out)) : out;
}

torch::Tensor SAGEImpl::forward_layer(int l, const dist::Block& block, const torch::Tensor& h) {
  return activate(l, layers_.at(static_cast<size_t>(l))->forward(block, h));
}

torch::Tensor SAGEImpl::forward(const std::vector<dist::Block>& blocks, const torch::Tensor& x) {
  if (static_cast<int>(blocks.size()) != num_layers()) {
    throw dist::Error(fmt::format("SAGE: {} blocks for {} layers (one fanout per layer)",
                                  blocks.size(), num_layers()));
  }
  torch::Tensor h = input_dropout_->options.p() > 0 ? Drop(input_dropout_, x) : x;
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
      torch::Tensor h = input[batch.input_nodes[0]];
      if (h.scalar_type() != torch::kFloat32) h = h.to(torch::kFloat32);
      const dist::Block& block = batch.blocks[0];
      torch::Tensor y =
          input_projected ? activate(l, layer->combine(block, h)) : forward_layer(l, block, h);
      output->set(batch.seeds[0], store_projection ? next->project(y) : y);
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

// ---------------------------------------------------------------- R-GCN

torch::Tensor block_etypes(const dist::DistGraph& g, const dist::Block& block) {
  return g.map_to_per_etype(block.edges_of().eids).first;
}

RelGraphConvImpl::RelGraphConvImpl(int64_t in_feats, int64_t out_feats, int64_t num_rels,
                                   int64_t num_bases, bool self_loop, bool bias)
    : in_feats_(in_feats), out_feats_(out_feats), num_rels_(num_rels) {
  if (in_feats < 1 || out_feats < 1 || num_rels < 1) {
    throw dist::Error(
        fmt::format("RelGraphConv: in_feats ({}), out_feats ({}) and num_rels ({}) "
                    "must be positive",
                    in_feats, out_feats, num_rels));
  }
  const bool basis = num_bases >= 1 && num_bases < num_rels;
  num_bases_ = basis ? num_bases : num_rels;
  // DGL's TypedLinear: U(-1/sqrt(in), 1/sqrt(in)) for the (basis) weights,
  // Xavier-uniform with ReLU gain for the coefficients and the self loop.
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_feats));
  bases_ = register_parameter(
      "bases", torch::empty({num_bases_, in_feats, out_feats}).uniform_(-bound, bound));
  if (basis) {
    const double cb = std::sqrt(2.0) * std::sqrt(6.0 / static_cast<double>(num_rels + num_bases));
    coeff_ = register_parameter("coeff", torch::empty({num_rels, num_bases}).uniform_(-cb, cb));
  } else {
    coeff_ = register_buffer("coeff", torch::eye(num_rels));
  }
  if (bias) bias_ = register_parameter("bias", torch::zeros({out_feats}));
  if (self_loop) {
    self_loop_ = register_module(
        "self_loop", torch::nn::Linear(torch::nn::LinearOptions(in_feats, out_feats).bias(false)));
    InitLinear(self_loop_);
  }
}

torch::Tensor RelGraphConvImpl::relation_weights() const {
  return torch::einsum("rb,bio->rio", {coeff_, bases_});
}

torch::Tensor RelGraphConvImpl::forward(const dist::Block& block, const torch::Tensor& h_src,
                                        const torch::Tensor& etypes) {
  if (h_src.dim() != 2 || h_src.size(1) != in_feats_ || h_src.size(0) != block.num_src_nodes()) {
    throw dist::Error(
        fmt::format("RelGraphConv({} -> {}): input of shape {} for a block of {} "
                    "sources",
                    in_feats_, out_feats_, fmt::join(h_src.sizes(), "x"), block.num_src_nodes()));
  }
  if (etypes.dim() != 1 || etypes.size(0) != block.num_edges()) {
    throw dist::Error(fmt::format("RelGraphConv: {} edge types for a block of {} edges",
                                  etypes.dim() == 1 ? etypes.size(0) : -1, block.num_edges()));
  }
  torch::Tensor rel = etypes.to(torch::kInt64);
  if (rel.numel() > 0 &&
      (rel.min().item<int64_t>() < 0 || rel.max().item<int64_t>() >= num_rels_)) {
    throw dist::Error(fmt::format("RelGraphConv: edge types must be in [0, {})", num_rels_));
  }
  const int64_t num_dst = block.num_dst_nodes();
  // norm = 1 / (in-edges of the destination with the same relation): the
  // mean of each (relation, destination) pair's messages.
  const dist::Block::Relation& edges = block.edges_of();
  RelationGroups groups = GroupByRelation(edges.indices, edges.edge_dst(), rel.contiguous(),
                                          block.num_src_nodes(), num_dst, num_rels_);
  torch::Tensor sizes = groups.pair_indptr.slice(0, 1) - groups.pair_indptr.slice(0, 0, -1);
  torch::Tensor norm = torch::empty({block.num_edges()}, h_src.options());
  norm.index_put_({groups.pair_eid},
                  sizes.to(h_src.scalar_type()).reciprocal().repeat_interleave(sizes));
  torch::Tensor weights = relation_weights();  // [R, in, out]
  torch::Tensor out = relation_aggregate(groups, h_src, weights.unbind(0), norm);
  if (self_loop_) out = out + self_loop_(h_src.slice(0, 0, num_dst));
  if (bias_.defined()) out = out + bias_;
  return out;
}

std::vector<torch::Tensor> RelGraphConvImpl::forward(const dist::Block& block,
                                                     const std::vector<torch::Tensor>& h_src) {
  const size_t T = block.ntypes.size();
  if (h_src.size() != T) {
    throw dist::Error(fmt::format("RelGraphConv: {} feature tensors for a block of {} node types",
                                  h_src.size(), T));
  }
  if (static_cast<int64_t>(block.edges.size()) != num_rels_) {
    throw dist::Error(fmt::format("RelGraphConv: a block of {} relations, the layer has {}",
                                  block.edges.size(), num_rels_));
  }
  for (size_t t = 0; t < T; ++t) {
    const torch::Tensor& h = h_src[t];
    if (h.dim() != 2 || h.size(1) != in_feats_ || h.size(0) != block.src_nodes[t].size(0)) {
      throw dist::Error(
          fmt::format("RelGraphConv({} -> {}): input of shape {} for {} sources "
                      "of type {}",
                      in_feats_, out_feats_, fmt::join(h.sizes(), "x"), block.src_nodes[t].size(0),
                      block.ntypes[t]));
    }
  }
  // A relation's endpoint types and CSR must be the block's (a block built
  // by hand may disagree): else it would read another type's rows.
  for (size_t r = 0; r < block.edges.size(); ++r) {
    const dist::Block::Relation& e = block.edges[r];
    const EdgeType& et = block.canonical_etypes.at(r);
    const bool types_ok =
        e.src_type == block.ntype_id(et.src_type) && e.dst_type == block.ntype_id(et.dst_type);
    if (!types_ok || e.indptr.dim() != 1 ||
        e.indptr.size(0) != block.dst_counts.at(static_cast<size_t>(e.dst_type)) + 1 ||
        e.indices.dim() != 1 || e.eids.sizes() != e.indices.sizes()) {
      throw dist::Error(fmt::format(
          "RelGraphConv: relation {} of the block disagrees with it (endpoint types {} -> {}, "
          "indptr of shape {} for {} destinations)",
          et.Canonical(), e.src_type, e.dst_type, fmt::join(e.indptr.sizes(), "x"),
          types_ok ? block.dst_counts[static_cast<size_t>(e.dst_type)] : -1));
    }
  }
  const torch::Tensor weights = relation_weights();  // [R, in, out]
  std::vector<torch::Tensor> out(T);
  for (size_t t = 0; t < T; ++t) {
    out[t] = torch::zeros({block.dst_counts[t], out_feats_}, h_src[t].options());
  }
  // Per relation: the mean of each destination's messages (one CSR kernel
  // over the block's CSR; 0 for a destination without edges of r), then
  // one GEMM.
  for (int64_t r = 0; r < num_rels_; ++r) {
    const dist::Block::Relation& e = block.edges[static_cast<size_t>(r)];
    if (e.num_edges() == 0) continue;
    torch::Tensor mean = aggregate(e.indptr, e.indices, h_src[e.src_type], Reduce::kMean);
    out[e.dst_type] = out[e.dst_type] + torch::mm(mean, weights[r]);
  }
  for (size_t t = 0; t < T; ++t) {
    if (self_loop_) out[t] = out[t] + self_loop_(h_src[t].slice(0, 0, block.dst_counts[t]));
    if (bias_.defined()) out[t] = out[t] + bias_;
  }
  return out;
}

RGCNImpl::RGCNImpl(int64_t in_feats, int64_t hidden, int64_t out_feats, int64_t num_rels,
                   int64_t num_bases, int num_layers, double dropout) {
  if (num_layers < 1) throw dist::Error("RGCN: num_layers must be >= 1");
  for (int l = 0; l < num_layers; ++l) {
    int64_t in = l == 0 ? in_feats : hidden;
    int64_t out = l + 1 == num_layers ? out_feats : hidden;
    layers_.push_back(
        register_module(fmt::format("layer{}", l), RelGraphConv(in, out, num_rels, num_bases)));
  }
  dropout_ = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor RGCNImpl::forward(const std::vector<dist::Block>& blocks,
                                const std::vector<torch::Tensor>& etypes, const torch::Tensor& x) {
  if (blocks.size() != layers_.size() || etypes.size() != blocks.size()) {
    throw dist::Error(fmt::format("RGCN: {} layers, but {} blocks and {} edge-type tensors",
                                  layers_.size(), blocks.size(), etypes.size()));
  }
  torch::Tensor h = x;
  for (size_t l = 0; l < layers_.size(); ++l) {
    h = layers_[l]->forward(blocks[l], h, etypes[l]);
    if (l + 1 < layers_.size()) h = Drop(dropout_, torch::relu(h));
  }
  return h;
}

std::vector<torch::Tensor> RGCNImpl::forward(const std::vector<dist::Block>& blocks,
                                             std::vector<torch::Tensor> x) {
  if (blocks.size() != layers_.size()) {
    throw dist::Error(fmt::format("RGCN: {} layers, but {} blocks", layers_.size(), blocks.size()));
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    x = layers_[l]->forward(blocks[l], x);
    if (l + 1 < layers_.size()) {
      for (torch::Tensor& h : x) h = Drop(dropout_, torch::relu(h));
    }
  }
  return x;
}

}  // namespace tessera::nn
