// File: src/sampling/block.cc
#include "src/sampling/block.h"

#include <algorithm>

#include "fmt/format.h"

namespace tessera::sampling {

StatusOr<Block> ToBlock(std::span<const int64_t> seeds, std::span<const int64_t> src,
                        std::span<const int64_t> dst, std::span<const int64_t> eids) {
  if (src.size() != dst.size() || src.size() != eids.size()) {
    return absl::InvalidArgumentError("src, dst and eids differ in length");
  }
  size_t n_dst = seeds.size(), n_edges = src.size();
  // Seeds sorted with their positions: lookups by binary search, no hash map.
  std::vector<std::pair<int64_t, int64_t>> sorted_seeds(n_dst);
  for (size_t i = 0; i < n_dst; ++i) sorted_seeds[i] = {seeds[i], static_cast<int64_t>(i)};
  std::sort(sorted_seeds.begin(), sorted_seeds.end());
  for (size_t i = 1; i < n_dst; ++i) {
    if (sorted_seeds[i].first == sorted_seeds[i - 1].first) {
      return absl::InvalidArgumentError(
          fmt::format("seed {} appears twice", sorted_seeds[i].first));
    }
  }
  auto seed_index = [&](int64_t id) -> int64_t {
    auto it =
        std::lower_bound(sorted_seeds.begin(), sorted_seeds.end(), std::make_pair(id, int64_t{-1}));
    return it != sorted_seeds.end() && it->first == id ? it->second : -1;
  };
  // Destination index of every edge, and the per-destination counts.
  Block block;
  block.indptr.assign(n_dst + 1, 0);
  std::vector<int64_t> dst_index(n_edges), src_index(n_edges);
  std::vector<int64_t> others;
  for (size_t e = 0; e < n_edges; ++e) {
    int64_t d = seed_index(dst[e]);
    if (d < 0) {
      return absl::InvalidArgumentError(
          fmt::format("edge {} -> {} does not end at a seed", src[e], dst[e]));
    }
    dst_index[e] = d;
    ++block.indptr[d + 1];
    src_index[e] = seed_index(src[e]);
    if (src_index[e] < 0) others.push_back(src[e]);
  }
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  block.src_nodes.reserve(n_dst + others.size());
  block.src_nodes.assign(seeds.begin(), seeds.end());
  block.src_nodes.insert(block.src_nodes.end(), others.begin(), others.end());
  for (size_t d = 0; d < n_dst; ++d) block.indptr[d + 1] += block.indptr[d];
  block.indices.resize(n_edges);
  block.eids.resize(n_edges);
  std::vector<int64_t> fill(block.indptr.begin(), block.indptr.end() - 1);
  for (size_t e = 0; e < n_edges; ++e) {
    int64_t s = src_index[e];
    if (s < 0) {
      s = static_cast<int64_t>(n_dst) +
          (std::lower_bound(others.begin(), others.end(), src[e]) - others.begin());
    }
    int64_t slot = fill[dst_index[e]]++;
    block.indices[slot] = s;
    block.eids[slot] = eids[e];
  }
  return block;
}

}  // namespace tessera::sampling
