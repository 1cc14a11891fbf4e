// File: src/sampling/hetero_block.cc
//
// Like ToBlock, without hash maps: seeds and sources are sorted as packed
// (id, index) keys with the radix sort and merged; new sources take their
// per-type index in order of first appearance (the smallest edge index of
// each run of equal sources, as the sort keeps runs in edge order).
#include "src/sampling/hetero_block.h"

#include <algorithm>

#include "fmt/format.h"
#include "src/sampling/radix_sort.h"

namespace tessera::sampling {

using internal::BitsFor;
using internal::RadixSort;

int64_t HeteroBlock::num_edges() const {
  int64_t total = 0;
  for (const HeteroBlockEdges& e : edges) total += e.size();
  return total;
}

std::vector<int64_t> HeteroBlock::NextSeeds() const {
  std::vector<int64_t> seeds;
  size_t total = 0;
  for (const auto& nodes : homo_src_nodes) total += nodes.size();
  seeds.reserve(total);
  for (const auto& nodes : homo_src_nodes) seeds.insert(seeds.end(), nodes.begin(), nodes.end());
  return seeds;
}

StatusOr<HeteroBlock> ToHeteroBlock(const PartitionBook& book, std::span<const int64_t> seeds,
                                    std::span<const int64_t> src, std::span<const int64_t> dst,
                                    std::span<const int64_t> eids) {
  if (src.size() != dst.size() || src.size() != eids.size()) {
    return absl::InvalidArgumentError(
        fmt::format("to_block: src, dst and eids differ in length ({}, {}, {})", src.size(),
                    dst.size(), eids.size()));
  }
  const int num_ntypes = book.num_ntypes(), num_etypes = book.num_etypes();
  const int64_t num_nodes = book.num_nodes(), num_edges = book.num_edges();
  // Endpoint types of each relation.
  std::vector<int> src_type(num_etypes), dst_type(num_etypes);
  for (int r = 0; r < num_etypes; ++r) {
    ASSIGN_OR_RETURN(src_type[r], book.NodeTypeId(book.etypes()[r].src_type));
    ASSIGN_OR_RETURN(dst_type[r], book.NodeTypeId(book.etypes()[r].dst_type));
  }
  auto node_error = [&](const char* what, size_t i, int64_t v) {
    return absl::InvalidArgumentError(fmt::format(
        "to_block: {} {} is node {}, outside the graph's {} nodes", what, i, v, num_nodes));
  };
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (seeds[i] < 0 || seeds[i] >= num_nodes) return node_error("seed", i, seeds[i]);
  }
  for (size_t e = 0; e < src.size(); ++e) {
    if (src[e] < 0 || src[e] >= num_nodes) return node_error("the source of edge", e, src[e]);
    if (dst[e] < 0 || dst[e] >= num_nodes) return node_error("the destination of edge", e, dst[e]);
    if (eids[e] < 0 || eids[e] >= num_edges) {
      return absl::InvalidArgumentError(fmt::format(
          "to_block: edge {} has id {}, outside the graph's {} edges", e, eids[e], num_edges));
    }
  }
  const size_t n_dst = seeds.size(), n_edges = src.size();
  const int id_bits = std::max(1, BitsFor(static_cast<uint64_t>(num_nodes)));
  const int seed_bits = BitsFor(n_dst), edge_bits = BitsFor(n_edges);
  if (id_bits + std::max(seed_bits, edge_bits) > 64) {
    return absl::InvalidArgumentError(
        fmt::format("to_block: {} edges over {} nodes exceed its 64-bit keys", n_edges, num_nodes));
  }
  HeteroBlock block;
  block.dst_nodes.resize(num_ntypes);
  block.src_nodes.resize(num_ntypes);
  block.homo_src_nodes.resize(num_ntypes);
  block.edges.resize(num_etypes);
  // Destination nodes, per type in seed order; each seed's type and index.
  std::vector<int> seed_type(n_dst);
  std::vector<int64_t> seed_index(n_dst);
  std::vector<uint64_t> sorted_seeds(n_dst), tmp;
  for (size_t i = 0; i < n_dst; ++i) {
    auto [t, id] = book.MapToPerNtype(seeds[i]);
    seed_type[i] = t;
    seed_index[i] = static_cast<int64_t>(block.dst_nodes[t].size());
    block.dst_nodes[t].push_back(id);
    sorted_seeds[i] = (static_cast<uint64_t>(seeds[i]) << seed_bits) | i;
  }
  for (int t = 0; t < num_ntypes; ++t) {
    block.src_nodes[t] = block.dst_nodes[t];
    block.homo_src_nodes[t].reserve(block.dst_nodes[t].size());
  }
  for (size_t i = 0; i < n_dst; ++i) block.homo_src_nodes[seed_type[i]].push_back(seeds[i]);
  RadixSort(sorted_seeds, seed_bits, seed_bits + id_bits, tmp);
  const uint64_t position_mask = (uint64_t{1} << seed_bits) - 1;
  auto seed_id = [&](size_t k) { return static_cast<int64_t>(sorted_seeds[k] >> seed_bits); };
  for (size_t k = 1; k < n_dst; ++k) {
    if (seed_id(k) == seed_id(k - 1)) {
      return absl::InvalidArgumentError(fmt::format("to_block: seed {} appears twice", seed_id(k)));
    }
  }
  auto type_error = [&](size_t e, int r, bool at_src, int actual) {
    const EdgeType& et = book.etypes()[r];
    return absl::InvalidArgumentError(fmt::format(
        "to_block: edge {} ({} -> {}, id {}) of relation '{}' does not {} a node of type '{}' "
        "(node {} is a '{}')",
        e, src[e], dst[e], eids[e], et.Canonical(), at_src ? "start at" : "end at",
        at_src ? et.src_type : et.dst_type, at_src ? src[e] : dst[e], book.ntypes()[actual]));
  };
  // Relation and destination of every edge (edges come grouped by
  // destination, mostly in seed order: the next seed is tried first).
  std::vector<int> relation(n_edges);
  std::vector<int64_t> per_eid(n_edges), dst_index(n_edges), src_index(n_edges);
  std::vector<int64_t> per_relation(num_etypes, 0);
  int64_t last_dst = -1, last_seed = -1;
  for (size_t e = 0; e < n_edges; ++e) {
    auto [r, id] = book.MapToPerEtype(eids[e]);
    relation[e] = r;
    per_eid[e] = id;
    ++per_relation[r];
    if (dst[e] != last_dst) {
      if (last_seed + 1 < static_cast<int64_t>(n_dst) && seeds[last_seed + 1] == dst[e]) {
        ++last_seed;
      } else {
        uint64_t probe = static_cast<uint64_t>(dst[e]) << seed_bits;
        auto it = std::lower_bound(sorted_seeds.begin(), sorted_seeds.end(), probe);
        if (it == sorted_seeds.end() || static_cast<int64_t>(*it >> seed_bits) != dst[e]) {
          return absl::InvalidArgumentError(fmt::format(
              "to_block: edge {} ({} -> {}) does not end at a seed", e, src[e], dst[e]));
        }
        last_seed = static_cast<int64_t>(*it & position_mask);
      }
      last_dst = dst[e];
    }
    if (seed_type[last_seed] != dst_type[r]) return type_error(e, r, false, seed_type[last_seed]);
    dst_index[e] = seed_index[last_seed];
  }
  // Sources sorted by id (packed with the edge index); each run is one
  // node. A seed keeps its destination index; the first edge of every other
  // node is recorded, and those nodes get their indices in edge order.
  std::vector<uint64_t> sorted_src(n_edges);
  for (size_t e = 0; e < n_edges; ++e) {
    sorted_src[e] = (static_cast<uint64_t>(src[e]) << edge_bits) | e;
  }
  RadixSort(sorted_src, edge_bits, edge_bits + id_bits, tmp);
  const uint64_t edge_mask = (uint64_t{1} << edge_bits) - 1;
  std::vector<int64_t> run_at_first_edge(n_edges, -1);  // Start in sorted_src of a new node's run.
  size_t k = 0;                                         // Into sorted_seeds.
  for (size_t at = 0; at < n_edges;) {
    const int64_t id = static_cast<int64_t>(sorted_src[at] >> edge_bits);
    size_t end = at + 1;
    while (end < n_edges && static_cast<int64_t>(sorted_src[end] >> edge_bits) == id) ++end;
    while (k < n_dst && seed_id(k) < id) ++k;
    if (k < n_dst && seed_id(k) == id) {
      const size_t i = sorted_seeds[k] & position_mask;
      for (size_t j = at; j < end; ++j) {
        const size_t e = sorted_src[j] & edge_mask;
        if (src_type[relation[e]] != seed_type[i]) {
          return type_error(e, relation[e], true, seed_type[i]);
        }
        src_index[e] = seed_index[i];
      }
    } else {
      run_at_first_edge[sorted_src[at] & edge_mask] = static_cast<int64_t>(at);
    }
    at = end;
  }
  for (size_t first = 0; first < n_edges; ++first) {
    if (run_at_first_edge[first] < 0) continue;
    const int64_t id = src[first];
    auto [t, per_id] = book.MapToPerNtype(id);
    const int64_t index = static_cast<int64_t>(block.src_nodes[t].size());
    block.src_nodes[t].push_back(per_id);
    block.homo_src_nodes[t].push_back(id);
    for (size_t j = static_cast<size_t>(run_at_first_edge[first]);
         j < n_edges && static_cast<int64_t>(sorted_src[j] >> edge_bits) == id; ++j) {
      const size_t e = sorted_src[j] & edge_mask;
      if (src_type[relation[e]] != t) return type_error(e, relation[e], true, t);
      src_index[e] = index;
    }
  }
  for (int r = 0; r < num_etypes; ++r) {
    HeteroBlockEdges& out = block.edges[r];
    for (auto* v : {&out.src, &out.dst, &out.eids, &out.homo_eids}) v->reserve(per_relation[r]);
  }
  for (size_t e = 0; e < n_edges; ++e) {
    HeteroBlockEdges& out = block.edges[relation[e]];
    out.src.push_back(src_index[e]);
    out.dst.push_back(dst_index[e]);
    out.eids.push_back(per_eid[e]);
    out.homo_eids.push_back(eids[e]);
  }
  return block;
}

}  // namespace tessera::sampling
