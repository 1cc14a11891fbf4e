// File: src/sampling/block.cc
#include "src/sampling/block.h"

#include <algorithm>

#include "fmt/format.h"
#include "src/base/default_init.h"
#include "src/sampling/radix_sort.h"

namespace tessera::sampling {

using internal::BitsFor;
using internal::RadixSort;

StatusOr<Block> ToBlock(std::span<const int64_t> seeds, std::span<const int64_t> src,
                        std::span<const int64_t> dst, std::span<const int64_t> eids) {
  if (src.size() != dst.size() || src.size() != eids.size()) {
    return absl::InvalidArgumentError(
        fmt::format("to_block: src, dst and eids differ in length ({}, {}, {})", src.size(),
                    dst.size(), eids.size()));
  }
  size_t n_dst = seeds.size(), n_edges = src.size();
  int64_t max_id = 0, min_id = 0;
  for (auto ids : {seeds, src}) {
    for (int64_t v : ids) {
      max_id = std::max(max_id, v);
      min_id = std::min(min_id, v);
    }
  }
  if (min_id < 0) {
    return absl::InvalidArgumentError(fmt::format("to_block: negative node id {}", min_id));
  }
  int id_bits = std::max(1, BitsFor(static_cast<uint64_t>(max_id)));
  int seed_bits = BitsFor(n_dst), edge_bits = BitsFor(n_edges);
  if (id_bits + std::max(seed_bits, edge_bits) > 64) {
    return absl::InvalidArgumentError(fmt::format(
        "to_block: {} edges over node ids up to {} exceed its 64-bit keys", n_edges, max_id));
  }
  // Seeds sorted by id, each packed with its position: (id << seed_bits) | i.
  UninitVector<uint64_t> sorted_seeds(n_dst), tmp;
  for (size_t i = 0; i < n_dst; ++i) {
    sorted_seeds[i] = (static_cast<uint64_t>(seeds[i]) << seed_bits) | i;
  }
  RadixSort(sorted_seeds, seed_bits, seed_bits + id_bits, tmp);
  uint64_t position_mask = (uint64_t{1} << seed_bits) - 1;
  auto seed_id = [&](size_t k) { return static_cast<int64_t>(sorted_seeds[k] >> seed_bits); };
  for (size_t k = 1; k < n_dst; ++k) {
    if (seed_id(k) == seed_id(k - 1)) {
      return absl::InvalidArgumentError(fmt::format("to_block: seed {} appears twice", seed_id(k)));
    }
  }
  // Destination index of every edge. Sampled edges come grouped by
  // destination, mostly in seed order: the seed after the previous run is
  // tried first, then a binary search.
  Block block;
  block.src_nodes.resize(1);
  block.num_dst_nodes = {static_cast<int64_t>(n_dst)};
  block.edges.resize(1);
  BlockEdges& out = block.edges[0];
  out.indptr.assign(n_dst + 1, 0);
  UninitVector<int64_t> dst_index(n_edges), src_index(n_edges);
  int64_t last_dst = 0, last_index = -1;
  for (size_t e = 0; e < n_edges; ++e) {
    const bool new_dst = e == 0 || dst[e] != last_dst;  // (Any id may come first, -1 too.)
    if (new_dst && last_index + 1 < static_cast<int64_t>(n_dst) &&
        seeds[last_index + 1] == dst[e]) {
      last_dst = dst[e];
      ++last_index;
    } else if (new_dst) {
      uint64_t probe = static_cast<uint64_t>(dst[e]) << seed_bits;
      auto it = std::lower_bound(sorted_seeds.begin(), sorted_seeds.end(), probe);
      if (dst[e] < 0 || it == sorted_seeds.end() ||
          static_cast<int64_t>(*it >> seed_bits) != dst[e]) {
        return absl::InvalidArgumentError(
            fmt::format("to_block: edge {} ({} -> {}) does not end at a seed", e, src[e], dst[e]));
      }
      last_dst = dst[e];
      last_index = static_cast<int64_t>(*it & position_mask);
    }
    dst_index[e] = last_index;
    ++out.indptr[last_index + 1];
  }
  // Sources sorted by id (packed with the edge index), merged with the
  // sorted seeds: a source that is a seed takes the seed's index, the others
  // get n_dst, n_dst + 1, ... in increasing id order.
  UninitVector<uint64_t> sorted_src(n_edges);
  for (size_t e = 0; e < n_edges; ++e) {
    sorted_src[e] = (static_cast<uint64_t>(src[e]) << edge_bits) | e;
  }
  RadixSort(sorted_src, edge_bits, edge_bits + id_bits, tmp);
  uint64_t edge_mask = (uint64_t{1} << edge_bits) - 1;
  UninitVector<int64_t>& src_nodes = block.src_nodes[0];
  src_nodes.assign(seeds.begin(), seeds.end());
  size_t k = 0;  // Into sorted_seeds.
  int64_t current = -1, index = -1;
  for (uint64_t packed : sorted_src) {
    int64_t id = static_cast<int64_t>(packed >> edge_bits);
    if (id != current) {
      current = id;
      while (k < n_dst && seed_id(k) < id) ++k;
      if (k < n_dst && seed_id(k) == id) {
        index = static_cast<int64_t>(sorted_seeds[k] & position_mask);
      } else {
        index = static_cast<int64_t>(src_nodes.size());
        src_nodes.push_back(id);
      }
    }
    src_index[packed & edge_mask] = index;
  }
  for (size_t d = 0; d < n_dst; ++d) out.indptr[d + 1] += out.indptr[d];
  out.indices.resize(n_edges);
  out.eids.resize(n_edges);
  UninitVector<int64_t> fill(out.indptr.begin(), out.indptr.end() - 1);
  for (size_t e = 0; e < n_edges; ++e) {
    int64_t slot = fill[dst_index[e]]++;
    out.indices[slot] = src_index[e];
    out.eids[slot] = eids[e];
  }
  return block;
}

int64_t Block::num_edges() const {
  int64_t total = 0;
  for (const BlockEdges& e : edges) total += e.size();
  return total;
}

std::vector<int64_t> Block::NextSeeds() const {
  std::vector<int64_t> seeds;
  size_t total = 0;
  for (const auto& nodes : src_nodes) total += nodes.size();
  seeds.reserve(total);
  for (int t = 0; t < num_ntypes(); ++t) {
    std::span<const int64_t> nodes = global_src_nodes(t);
    seeds.insert(seeds.end(), nodes.begin(), nodes.end());
  }
  return seeds;
}

}  // namespace tessera::sampling
