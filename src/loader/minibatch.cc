// File: src/loader/minibatch.cc
#include "src/loader/minibatch.h"

#include <algorithm>

#include "fmt/format.h"
#include "src/base/random.h"

namespace tessera::loader {

uint64_t DeriveSeed(uint64_t seed, uint64_t index) {
  uint64_t state = seed ^ (0x9E3779B97F4A7C15ull * (index + 1));
  SplitMix64(&state);
  return SplitMix64(&state);
}

int64_t MiniBatch::num_sampled_edges() const {
  int64_t n = 0;
  for (const sampling::Block& b : blocks) n += b.num_edges();
  return n;
}

Status ValidateNeighborSpec(const NeighborSpec& spec) {
  if (spec.fanouts.empty()) {
    return absl::InvalidArgumentError("the neighbour sampler needs at least one fanout");
  }
  for (int64_t f : spec.fanouts) {
    if (f == 0 || f < -1) {
      return absl::InvalidArgumentError(
          fmt::format("fanout {} in [{}]: each must be positive, or -1 for all neighbours", f,
                      fmt::join(spec.fanouts, ", ")));
    }
  }
  return absl::OkStatus();
}

StatusOr<MiniBatch> SampleBlocks(kv::KvStore& store, std::vector<int64_t> seeds,
                                 const NeighborSpec& spec, uint64_t seed,
                                 std::span<const int64_t> exclude) {
  RETURN_IF_ERROR(ValidateNeighborSpec(spec));
  MiniBatch batch;
  batch.seeds = seeds;
  size_t layers = spec.fanouts.size();
  batch.blocks.resize(layers);
  std::vector<int64_t> frontier = std::move(seeds);
  for (size_t l = layers; l-- > 0;) {
    kv::SampleRequest request{.fanout = spec.fanouts[l],
                              .dir = spec.dir,
                              .replace = spec.replace,
                              .prob = spec.prob,
                              .exclude = exclude,
                              .seed = DeriveSeed(seed, l)};
    ASSIGN_OR_RETURN(sampling::SampledEdges edges, store.SampleNeighbors(frontier, request));
    // Messages flow towards the seeds: in-edges as they are, out-edges reversed.
    bool in = spec.dir == sampling::EdgeDir::kIn;
    ASSIGN_OR_RETURN(batch.blocks[l], sampling::ToBlock(frontier, in ? edges.src : edges.dst,
                                                        in ? edges.dst : edges.src, edges.eid));
    frontier = batch.blocks[l].src_nodes;
  }
  return batch;
}

Status ValidateEdgeSpec(const EdgeSpec& spec, int64_t num_nodes, int64_t num_edges) {
  RETURN_IF_ERROR(ValidateNeighborSpec(spec.neighbors));
  if (spec.negatives < 0) {
    return absl::InvalidArgumentError(
        fmt::format("{} negatives per edge: must be 0 or more", spec.negatives));
  }
  if (spec.negatives > 0 && num_nodes == 0) {
    return absl::InvalidArgumentError("negative sampling needs a graph with nodes");
  }
  if (spec.exclude == Exclude::kReverseId) {
    if (static_cast<int64_t>(spec.reverse_eids.size()) != num_edges) {
      return absl::InvalidArgumentError(
          fmt::format("exclude reverse_id needs reverse_eids with one entry per edge ({}), got {}",
                      num_edges, spec.reverse_eids.size()));
    }
    for (size_t e = 0; e < spec.reverse_eids.size(); ++e) {
      if (spec.reverse_eids[e] < 0 || spec.reverse_eids[e] >= num_edges) {
        return absl::InvalidArgumentError(
            fmt::format("reverse_eids[{}] = {} is not an edge id (0 to {})", e,
                        spec.reverse_eids[e], num_edges - 1));
      }
    }
  } else if (!spec.reverse_eids.empty()) {
    return absl::InvalidArgumentError("reverse_eids given, but exclude is not reverse_id");
  }
  return absl::OkStatus();
}

StatusOr<EdgeBatch> SampleEdgeBatch(kv::KvStore& store, std::span<const int64_t> eids,
                                    const EdgeSpec& spec, uint64_t seed) {
  int64_t num_nodes = store.book().num_nodes();
  EdgeBatch batch;
  batch.eids.assign(eids.begin(), eids.end());
  size_t n = eids.size();
  std::vector<int64_t> src(n), dst(n);
  RETURN_IF_ERROR(store.FindEdges(eids, src.data(), dst.data()));
  size_t k = static_cast<size_t>(spec.negatives);
  std::vector<int64_t> neg_src(n * k), neg_dst(n * k);
  Rng rng(DeriveSeed(seed, 1000), /*stream=*/7);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < k; ++j) {
      neg_src[i * k + j] = src[i];
      neg_dst[i * k + j] = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(num_nodes)));
    }
  }
  // The nodes of both pair graphs, sorted; pairs as indices into them.
  std::vector<int64_t> nodes;
  nodes.reserve(2 * n + 2 * n * k);
  for (const auto* v : {&src, &dst, &neg_src, &neg_dst}) {
    nodes.insert(nodes.end(), v->begin(), v->end());
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  auto compact = [&](const std::vector<int64_t>& ids) {
    std::vector<int64_t> out(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      out[i] = std::lower_bound(nodes.begin(), nodes.end(), ids[i]) - nodes.begin();
    }
    return out;
  };
  batch.positive = {compact(src), compact(dst)};
  batch.negative = {compact(neg_src), compact(neg_dst)};
  std::vector<int64_t> exclude;
  if (spec.exclude != Exclude::kNone) {
    exclude.assign(eids.begin(), eids.end());
    if (spec.exclude == Exclude::kReverseId) {
      for (int64_t e : eids) exclude.push_back(spec.reverse_eids[e]);
    }
    std::sort(exclude.begin(), exclude.end());
    exclude.erase(std::unique(exclude.begin(), exclude.end()), exclude.end());
  }
  ASSIGN_OR_RETURN(batch.mini,
                   SampleBlocks(store, std::move(nodes), spec.neighbors, seed, exclude));
  return batch;
}

}  // namespace tessera::loader
