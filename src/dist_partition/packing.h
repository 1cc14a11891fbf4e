// File: src/dist_partition/packing.h
//
// Grouping items by destination rank for Comm's exchanges (comm.h): a stable
// counting sort, the packed copy it implies, and the way back. Not
// collective; internal to src/dist_partition.
#ifndef TESSERA_SRC_DIST_PARTITION_PACKING_H_
#define TESSERA_SRC_DIST_PARTITION_PACKING_H_

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::dist::internal {

// Item order[k] is the k-th in the packed order: items grouped by
// destination (rank 0's first), in their own order within a group.
struct Packing {
  std::vector<int64_t> counts;  // Items per destination.
  std::vector<int64_t> order;
};

inline Packing PackBy(std::span<const int32_t> dest, int num_ranks) {
  Packing p;
  p.counts.assign(num_ranks, 0);
  for (int32_t d : dest) ++p.counts[d];
  std::vector<int64_t> next(num_ranks, 0);
  for (int r = 1; r < num_ranks; ++r) next[r] = next[r - 1] + p.counts[r - 1];
  p.order.resize(dest.size());
  for (size_t i = 0; i < dest.size(); ++i) p.order[next[dest[i]]++] = static_cast<int64_t>(i);
  return p;
}

// make(i) for every item, in the packed order.
template <typename T, typename Make>
std::vector<T> Pack(const Packing& p, Make make) {
  std::vector<T> out;
  out.reserve(p.order.size());
  for (int64_t i : p.order) out.push_back(make(i));
  return out;
}

// The inverse: `packed` (one value per item, in the packed order, e.g. the
// answers to a packed question) back in item order.
template <typename T>
std::vector<T> Unpack(const Packing& p, std::vector<T> packed) {
  std::vector<T> out(packed.size());
  for (size_t k = 0; k < packed.size(); ++k) out[p.order[k]] = packed[k];
  return out;
}

}  // namespace tessera::dist::internal

#endif  // TESSERA_SRC_DIST_PARTITION_PACKING_H_
