// File: src/loader/minibatch.cc
#include "src/loader/minibatch.h"

#include <algorithm>

#include "fmt/format.h"
#include "src/base/memory_budget.h"
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

size_t NumLayers(const NeighborSpec& spec) {
  return spec.etype_fanouts.empty() ? spec.fanouts.size() : spec.etype_fanouts.size();
}

namespace {

std::string RelationName(const PartitionBook& book, size_t r) {
  return book.etypes()[r].Canonical();
}

}  // namespace

Status ValidateNeighborSpec(const NeighborSpec& spec, const PartitionBook& book) {
  if (!spec.fanouts.empty() && !spec.etype_fanouts.empty()) {
    return absl::InvalidArgumentError(
        "the neighbour sampler takes fanouts or per-relation fanouts, not both");
  }
  if (NumLayers(spec) == 0) {
    return absl::InvalidArgumentError("the neighbour sampler needs at least one fanout");
  }
  for (int64_t f : spec.fanouts) {
    if (f < -1) {  // 0: a layer without edges, as DGL's.
      return absl::InvalidArgumentError(
          fmt::format("fanout {} in [{}]: each must be -1 (all neighbours), 0 (none) or positive",
                      f, fmt::join(spec.fanouts, ", ")));
    }
  }
  const size_t relations = static_cast<size_t>(book.num_etypes());
  for (size_t l = 0; l < spec.etype_fanouts.size(); ++l) {
    const std::vector<int64_t>& layer = spec.etype_fanouts[l];
    if (layer.size() != relations) {
      return absl::InvalidArgumentError(
          fmt::format("layer {} has {} per-relation fanouts; the graph has {} relations", l,
                      layer.size(), relations));
    }
    for (size_t r = 0; r < relations; ++r) {
      if (layer[r] < -1) {
        return absl::InvalidArgumentError(
            fmt::format("fanout {} of relation {} in layer {}: must be -1 (all) or >= 0", layer[r],
                        RelationName(book, r), l));
      }
    }
  }
  return absl::OkStatus();
}

kvstore::SampleRequest LayerRequest(const NeighborSpec& spec, const PartitionBook& book,
                                    size_t layer, uint64_t seed, std::span<const int64_t> exclude) {
  kvstore::SampleRequest request{.dir = spec.dir,
                                 .replace = spec.replace,
                                 .prob = spec.prob,
                                 .exclude = exclude,
                                 .seed = DeriveSeed(seed, layer)};
  if (!spec.etype_fanouts.empty()) {
    request.etype_fanouts = spec.etype_fanouts[layer];
  } else if (book.num_etypes() > 1) {
    request.etype_fanouts.assign(book.num_etypes(), spec.fanouts[layer]);
  } else {
    request.fanout = spec.fanouts[layer];
  }
  return request;
}

namespace {

// Whether a spec's blocks are typed: on a graph of one type and one
// relation, typed and untyped blocks are the same, and the untyped path is
// taken.
bool Typed(const NeighborSpec& spec, const PartitionBook& book) {
  return spec.typed && !book.is_homogeneous();
}

}  // namespace

StatusOr<MiniBatch> SampleBlocks(kvstore::GraphService& store, std::vector<int64_t> seeds,
                                 const NeighborSpec& spec, uint64_t seed,
                                 std::span<const int64_t> exclude) {
  const PartitionBook& book = store.book();
  RETURN_IF_ERROR(ValidateNeighborSpec(spec, book));
  const bool typed = Typed(spec, book);
  // Messages flow towards the seeds: in-edges as they are, out-edges
  // reversed (which would turn typed edges into ones of no relation).
  const bool in = spec.dir == sampling::EdgeDir::kIn;
  if (typed && !in) {
    return absl::InvalidArgumentError(
        "typed blocks sample in-edges; for out-edges sample the reverse relations");
  }
  MiniBatch batch;
  batch.seeds = seeds;
  size_t layers = NumLayers(spec);
  batch.blocks.resize(layers);
  std::vector<int64_t> frontier = std::move(seeds);
  for (size_t l = layers; l-- > 0;) {
    ASSIGN_OR_RETURN(sampling::SampledEdges edges,
                     store.SampleNeighbors(frontier, LayerRequest(spec, book, l, seed, exclude)));
    std::span<const int64_t> src = in ? edges.src : edges.dst, dst = in ? edges.dst : edges.src;
    ASSIGN_OR_RETURN(batch.blocks[l], typed ? sampling::ToBlock(book, frontier, src, dst, edges.eid)
                                            : sampling::ToBlock(frontier, src, dst, edges.eid));
    frontier = batch.blocks[l].NextSeeds();
  }
  return batch;
}

Status ValidateEdgeSpec(const EdgeSpec& spec, const PartitionBook& book) {
  RETURN_IF_ERROR(ValidateNeighborSpec(spec.neighbors, book));
  const int64_t num_nodes = book.num_nodes(), num_edges = book.num_edges();
  if (spec.negatives < 0) {
    return absl::InvalidArgumentError(
        fmt::format("{} negatives per edge: must be 0 or more", spec.negatives));
  }
  if (spec.negatives > 0) {
    if (num_nodes == 0)
      return absl::InvalidArgumentError("negative sampling needs a graph with nodes");
    // Negatives are drawn from the destination type of each relation.
    for (int r = 0; r < book.num_etypes(); ++r) {
      ASSIGN_OR_RETURN(int t, book.NodeTypeId(book.etypes()[r].dst_type));
      if (book.NumEdgesOfType(r) > 0 && book.NumNodesOfType(t) == 0) {
        return absl::InvalidArgumentError(
            fmt::format("negative sampling for relation {}: its destination type has no nodes",
                        RelationName(book, r)));
      }
    }
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
  if (spec.exclude == Exclude::kReverseTypes) {
    const int relations = book.num_etypes();
    if (static_cast<int>(spec.reverse_etypes.size()) != relations) {
      return absl::InvalidArgumentError(
          fmt::format("exclude reverse_types needs one reverse relation per relation ({}), got {}",
                      relations, spec.reverse_etypes.size()));
    }
    for (int r = 0; r < relations; ++r) {
      const int rr = spec.reverse_etypes[r];
      if (rr == -1) continue;
      if (rr < 0 || rr >= relations) {
        return absl::InvalidArgumentError(
            fmt::format("the reverse of relation {} is relation id {}, not one of 0 to {}",
                        RelationName(book, r), rr, relations - 1));
      }
      const EdgeType& fwd = book.etypes()[r];
      const EdgeType& rev = book.etypes()[rr];
      if (rev.src_type != fwd.dst_type || rev.dst_type != fwd.src_type) {
        return absl::InvalidArgumentError(fmt::format(
            "relation {} cannot be the reverse of relation {}: the reverse must go from {} to {}",
            rev.Canonical(), fwd.Canonical(), fwd.dst_type, fwd.src_type));
      }
      if (book.NumEdgesOfType(rr) != book.NumEdgesOfType(r)) {
        return absl::InvalidArgumentError(fmt::format(
            "relation {} has {} edges but its reverse {} has {}: reverse_types pairs edge i of "
            "one with edge i of the other",
            fwd.Canonical(), book.NumEdgesOfType(r), rev.Canonical(), book.NumEdgesOfType(rr)));
      }
    }
  } else if (!spec.reverse_etypes.empty()) {
    return absl::InvalidArgumentError("reverse_etypes given, but exclude is not reverse_types");
  }
  return absl::OkStatus();
}

namespace {

// A batch's positive pairs and k negatives per edge, in homogeneous ids.
struct Pairs {
  std::vector<int64_t> src, dst;          // Endpoints of each edge.
  std::vector<int64_t> neg_src, neg_dst;  // k per edge, in order.
};

// Each negative keeps the edge's source; its destination is uniform among
// the nodes of the edge relation's destination type (DGL's Uniform on one
// relation; on a one-type graph, among all nodes).
StatusOr<Pairs> FindPairs(kvstore::GraphService& store, std::span<const int64_t> eids,
                          int negatives, uint64_t seed) {
  const PartitionBook& book = store.book();
  const size_t n = eids.size(), k = static_cast<size_t>(negatives);
  RETURN_IF_ERROR(CheckFitsInMemory(
      fmt::format("{} edges x {} negatives per edge (source and destination ids)", n, k), n,
      2 * sizeof(int64_t) * k));
  Pairs p{std::vector<int64_t>(n), std::vector<int64_t>(n), std::vector<int64_t>(n * k),
          std::vector<int64_t>(n * k)};
  RETURN_IF_ERROR(store.FindEdges(eids, p.src.data(), p.dst.data()));
  Rng rng(DeriveSeed(seed, 1000), /*stream=*/7);
  if (k > 0 && book.num_ntypes() > 1) {
    std::vector<int> dst_type(book.num_etypes());
    for (int r = 0; r < book.num_etypes(); ++r) {
      ASSIGN_OR_RETURN(dst_type[r], book.NodeTypeId(book.etypes()[r].dst_type));
    }
    for (size_t i = 0; i < n; ++i) {
      int t = dst_type[book.MapToPerEtype(eids[i]).first];
      uint64_t count = static_cast<uint64_t>(book.NumNodesOfType(t));
      if (count == 0) {
        return absl::InvalidArgumentError(fmt::format(
            "negative sampling for edge {}: type {} has no nodes", eids[i], book.ntypes()[t]));
      }
      for (size_t j = 0; j < k; ++j) {
        p.neg_src[i * k + j] = p.src[i];
        p.neg_dst[i * k + j] = book.MapToHomoNid(t, static_cast<int64_t>(rng.Below(count)));
      }
    }
  } else {
    uint64_t count = static_cast<uint64_t>(book.num_nodes());
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < k; ++j) {
        p.neg_src[i * k + j] = p.src[i];
        p.neg_dst[i * k + j] = static_cast<int64_t>(rng.Below(count));
      }
    }
  }
  return p;
}

// The endpoints of each edge (answers of the machines that own the edges)
// are nodes of its relation's endpoint types: a forged answer is DataLoss,
// not a pair indexing the wrong type's nodes.
Status CheckEndpointTypes(const PartitionBook& book, std::span<const int64_t> eids,
                          const Pairs& p) {
  std::vector<int> src_type(book.num_etypes()), dst_type(book.num_etypes());
  for (int r = 0; r < book.num_etypes(); ++r) {
    ASSIGN_OR_RETURN(src_type[r], book.NodeTypeId(book.etypes()[r].src_type));
    ASSIGN_OR_RETURN(dst_type[r], book.NodeTypeId(book.etypes()[r].dst_type));
  }
  for (size_t i = 0; i < eids.size(); ++i) {
    const int r = book.MapToPerEtype(eids[i]).first;
    for (const bool at_src : {true, false}) {
      const int64_t v = at_src ? p.src[i] : p.dst[i];
      const int want = at_src ? src_type[r] : dst_type[r];
      if (v < 0 || v >= book.num_nodes() || book.MapToPerNtype(v).first != want) {
        return absl::DataLossError(fmt::format(
            "edge {} of relation {} has {} {}, not a node of type '{}' (a forged or corrupt "
            "find_edges answer)",
            eids[i], RelationName(book, r), at_src ? "source" : "destination", v,
            book.ntypes()[want]));
      }
    }
  }
  return absl::OkStatus();
}

// Every node of the pairs, sorted and distinct.
std::vector<int64_t> PairNodes(const Pairs& p) {
  std::vector<int64_t> nodes;
  nodes.reserve(2 * (p.src.size() + p.neg_src.size()));
  for (const auto* v : {&p.src, &p.dst, &p.neg_src, &p.neg_dst}) {
    nodes.insert(nodes.end(), v->begin(), v->end());
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

// The edges a batch keeps out of its blocks, sorted and distinct.
StatusOr<std::vector<int64_t>> ExcludedEdges(const PartitionBook& book,
                                             std::span<const int64_t> eids, const EdgeSpec& spec) {
  std::vector<int64_t> exclude;
  if (spec.exclude == Exclude::kNone) return exclude;
  exclude.assign(eids.begin(), eids.end());
  if (spec.exclude == Exclude::kReverseId) {
    if (static_cast<int64_t>(spec.reverse_eids.size()) != book.num_edges()) {
      return absl::InvalidArgumentError("exclude reverse_id: reverse_eids not validated");
    }
    for (int64_t e : eids) exclude.push_back(spec.reverse_eids[e]);
  } else if (spec.exclude == Exclude::kReverseTypes) {
    if (static_cast<int>(spec.reverse_etypes.size()) != book.num_etypes()) {
      return absl::InvalidArgumentError("exclude reverse_types: reverse_etypes not validated");
    }
    for (int64_t e : eids) {
      auto [r, id] = book.MapToPerEtype(e);
      const int rr = spec.reverse_etypes[r];
      if (rr < 0) {
        return absl::InvalidArgumentError(
            fmt::format("exclude reverse_types: relation {} (of edge {}) has no reverse relation",
                        RelationName(book, r), e));
      }
      exclude.push_back(book.MapToHomoEid(rr, id));
    }
  }
  std::sort(exclude.begin(), exclude.end());
  exclude.erase(std::unique(exclude.begin(), exclude.end()), exclude.end());
  return exclude;
}

}  // namespace

StatusOr<EdgeBatch> SampleEdgeBatch(kvstore::GraphService& store, std::span<const int64_t> eids,
                                    const EdgeSpec& spec, uint64_t seed) {
  const PartitionBook& book = store.book();
  const bool typed = Typed(spec.neighbors, book);
  ASSIGN_OR_RETURN(Pairs p, FindPairs(store, eids, spec.negatives, seed));
  if (typed) RETURN_IF_ERROR(CheckEndpointTypes(book, eids, p));
  std::vector<int64_t> nodes = PairNodes(p);
  // A node's type and id within it; per type, the ids of the pair nodes:
  // ascending, as global ids are within a type, and so the seed order
  // SampleBlocks keeps. Pairs index into them.
  auto typed_id = [&](int64_t v) {
    return typed ? book.MapToPerNtype(v) : std::pair<int, int64_t>{0, v};
  };
  std::vector<std::vector<int64_t>> by_type(typed ? book.num_ntypes() : 1);
  for (int64_t v : nodes) {
    auto [t, id] = typed_id(v);
    by_type[t].push_back(id);
  }
  auto local = [&](int64_t v) {
    auto [t, id] = typed_id(v);
    return std::lower_bound(by_type[t].begin(), by_type[t].end(), id) - by_type[t].begin();
  };
  const size_t R = typed ? static_cast<size_t>(book.num_etypes()) : 1;
  const size_t k = static_cast<size_t>(spec.negatives);
  EdgeBatch batch;
  batch.eids.assign(eids.begin(), eids.end());
  batch.positive.resize(R);
  batch.negative.resize(R);
  for (size_t i = 0; i < eids.size(); ++i) {
    auto [r, id] = typed ? book.MapToPerEtype(eids[i]) : std::pair<int, int64_t>{0, eids[i]};
    PairEdges& pos = batch.positive[r];
    PairEdges& neg = batch.negative[r];
    pos.eids.push_back(id);
    pos.src.push_back(local(p.src[i]));
    pos.dst.push_back(local(p.dst[i]));
    for (size_t j = i * k; j < (i + 1) * k; ++j) {
      neg.src.push_back(local(p.neg_src[j]));
      neg.dst.push_back(local(p.neg_dst[j]));
    }
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> exclude, ExcludedEdges(book, eids, spec));
  ASSIGN_OR_RETURN(batch.mini,
                   SampleBlocks(store, std::move(nodes), spec.neighbors, seed, exclude));
  return batch;
}

}  // namespace tessera::loader
