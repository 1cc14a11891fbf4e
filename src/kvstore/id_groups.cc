// File: src/kvstore/id_groups.cc
#include "src/kvstore/id_groups.h"

#include <algorithm>
#include <unordered_map>

#include "fmt/format.h"
#include "src/kvstore/feature_store.h"

namespace tessera::kvstore {

StatusOr<OwnerSplit> SplitByOwner(const PartitionBook& book, shm::Policy policy, int type,
                                  const std::string& what, std::span<const int64_t> ids) {
  OwnerSplit split;
  int K = book.num_partitions();
  split.ids.resize(K);
  split.positions.resize(K);
  bool node = policy == shm::Policy::kNode;
  int64_t limit = NumIds(book, policy, type);
  const std::vector<int64_t>& offsets = IdOffsets(book, policy, type);
  // Two passes (owners, then exact-size fills) instead of growing vectors.
  std::vector<int32_t> owners(ids.size());
  std::vector<size_t> counts(K, 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t id = ids[i];
    if (id < 0 || id >= limit) {
      return absl::OutOfRangeError(
          fmt::format("id {} (position {}) is out of range for {} ({} {}s)", id, i, what, limit,
                      node ? "node" : "edge"));
    }
    owners[i] = static_cast<int32_t>(std::upper_bound(offsets.begin() + 1, offsets.end(), id) -
                                     offsets.begin()) -
                1;
    ++counts[owners[i]];
  }
  for (int p = 0; p < K; ++p) {
    split.ids[p].resize(counts[p]);
    split.positions[p].resize(counts[p]);
    counts[p] = 0;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    int p = owners[i];
    size_t k = counts[p]++;
    split.ids[p][k] = ids[i];
    split.positions[p][k] = static_cast<int64_t>(i);
  }
  return split;
}

GroupedIds GroupIds(const std::vector<int64_t>& ids, const std::vector<int64_t>& positions,
                    std::pair<int64_t, int64_t> range) {
  GroupedIds g;
  size_t n = ids.size();
  g.positions.resize(n);
  auto span = static_cast<uint64_t>(range.second - range.first);
  if (span <= 4 * static_cast<uint64_t>(n) + 1024) {
    // Counting sort over the owner's id range.
    std::vector<uint32_t> count(span + 1, 0);
    for (int64_t id : ids) ++count[static_cast<size_t>(id - range.first) + 1];
    size_t distinct = 0;
    for (size_t r = 1; r <= span; ++r) distinct += count[r] != 0;
    g.ids.reserve(distinct);
    g.group_start.reserve(distinct + 1);
    for (size_t r = 0; r < span; ++r) {
      if (count[r + 1] != 0) {
        g.ids.push_back(range.first + static_cast<int64_t>(r));
        g.group_start.push_back(count[r]);
      }
      count[r + 1] += count[r];
    }
    g.group_start.push_back(n);
    for (size_t i = 0; i < n; ++i) {
      g.positions[count[static_cast<size_t>(ids[i] - range.first)]++] = positions[i];
    }
    return g;
  }
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ids[a] < ids[b]; });
  for (size_t k = 0; k < n; ++k) {
    int64_t id = ids[order[k]];
    if (g.ids.empty() || g.ids.back() != id) {
      g.ids.push_back(id);
      g.group_start.push_back(k);
    }
    g.positions[k] = positions[order[k]];
  }
  g.group_start.push_back(n);
  return g;
}

DistinctIds FindRepeats(std::span<const int64_t> ids, std::pair<int64_t, int64_t> range,
                        std::vector<uint64_t>& bits) {
  bits.resize(static_cast<size_t>((range.second - range.first + 63) / 64));
  bool repeated = false;
  for (int64_t v : ids) {
    if (v < range.first || v >= range.second) continue;
    const uint64_t i = static_cast<uint64_t>(v - range.first), bit = uint64_t{1} << (i % 64);
    repeated |= (bits[i / 64] & bit) != 0;
    bits[i / 64] |= bit;
  }
  for (int64_t v : ids) {
    if (v >= range.first && v < range.second) bits[static_cast<uint64_t>(v - range.first) / 64] = 0;
  }
  DistinctIds out;
  if (!repeated) return out;
  std::unordered_map<int64_t, int64_t> at;
  out.index.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    auto [it, added] = at.try_emplace(ids[i], static_cast<int64_t>(out.ids.size()));
    if (added) out.ids.push_back(ids[i]);
    out.index[i] = it->second;
  }
  return out;
}

sampling::SampledEdges RepeatEdges(const sampling::SampledEdges& edges,
                                   std::span<const int64_t> index) {
  sampling::SampledEdges out;
  out.offsets.assign(index.size() + 1, 0);
  for (size_t i = 0; i < index.size(); ++i) {
    const auto u = static_cast<size_t>(index[i]);
    out.offsets[i + 1] = out.offsets[i] + edges.offsets[u + 1] - edges.offsets[u];
  }
  for (auto* v : {&out.src, &out.dst, &out.eid}) v->resize(out.offsets.back());
  for (size_t i = 0; i < index.size(); ++i) {
    const auto u = static_cast<size_t>(index[i]);
    const int64_t from = edges.offsets[u], n = edges.offsets[u + 1] - from, to = out.offsets[i];
    std::copy_n(edges.src.begin() + from, n, out.src.begin() + to);
    std::copy_n(edges.dst.begin() + from, n, out.dst.begin() + to);
    std::copy_n(edges.eid.begin() + from, n, out.eid.begin() + to);
  }
  return out;
}

}  // namespace tessera::kvstore
