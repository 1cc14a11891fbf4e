// File: src/dist_partition/packing.h
//
// Grouping items by destination rank for Comm's exchanges (comm.h): a stable
// counting sort, the packed copy it implies, and the way back. Not
// collective; internal to src/dist_partition.
#ifndef TESSERA_SRC_DIST_PARTITION_PACKING_H_
#define TESSERA_SRC_DIST_PARTITION_PACKING_H_

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "src/dist_partition/comm.h"

namespace tessera::dist_partition::internal {

// Item order[k] is the k-th in the packed order: items grouped by
// destination (rank 0's first), in their own order within a group. Items
// with a negative destination are not sent (not in `order`).
struct Packing {
  std::vector<int64_t> counts;  // Items per destination.
  std::vector<int64_t> order;
};

inline Packing PackBy(std::span<const int32_t> dest, int num_ranks) {
  Packing p;
  p.counts.assign(num_ranks, 0);
  for (int32_t d : dest) {
    if (d >= 0) ++p.counts[d];
  }
  std::vector<int64_t> next(num_ranks, 0);
  for (int r = 1; r < num_ranks; ++r) next[r] = next[r - 1] + p.counts[r - 1];
  p.order.resize(next[num_ranks - 1] + p.counts[num_ranks - 1]);
  for (size_t i = 0; i < dest.size(); ++i) {
    if (dest[i] >= 0) p.order[next[dest[i]]++] = static_cast<int64_t>(i);
  }
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

// Frees a vector's memory (assigning {} keeps its capacity).
template <typename T>
void Free(std::vector<T>& v) {
  std::vector<T>().swap(v);
}

// Sends make(i) to rank dest[i] for every item i (none when dest[i] < 0),
// in rounds of at most comm.round_bytes() per rank, and hands what this rank
// receives in each round (by source) to consume(std::span<const T>) before
// the next round: only one round's packed and received copies exist at a time.
template <typename T, typename Make, typename Consume>
Status ExchangeEachRound(Comm& comm, std::span<const int32_t> dest, Make make, Consume consume) {
  const int64_t batch = std::max<int64_t>(1, comm.round_bytes() / static_cast<int64_t>(sizeof(T)));
  const int64_t n = static_cast<int64_t>(dest.size());
  ASSIGN_OR_RETURN(int64_t rounds, AllMax(comm, (n + batch - 1) / batch));
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t begin = std::min(n, round * batch), end = std::min(n, begin + batch);
    Packing packing = PackBy(dest.subspan(begin, end - begin), comm.size());
    std::vector<T> packed = Pack<T>(packing, [&](int64_t i) { return make(begin + i); });
    ASSIGN_OR_RETURN(Received<T> got, Exchange<T>(comm, packed, packing.counts));
    Free(packed);
    consume(std::span<const T>(got.data));
  }
  return absl::OkStatus();
}

// As ExchangeEachRound, keeping everything received: by round, then by
// source.
template <typename T, typename Make>
StatusOr<std::vector<T>> ExchangeInRounds(Comm& comm, std::span<const int32_t> dest, Make make) {
  std::vector<int64_t> totals(comm.size(), 0);
  for (int32_t d : dest) {
    if (d >= 0) ++totals[d];
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> incoming, ExchangeCounts(comm, totals));
  int64_t expected = 0;
  for (int64_t c : incoming) expected += c;
  std::vector<T> out;
  out.reserve(expected);
  RETURN_IF_ERROR(ExchangeEachRound<T>(comm, dest, make, [&](std::span<const T> got) {
    out.insert(out.end(), got.begin(), got.end());
  }));
  return out;
}

}  // namespace tessera::dist_partition::internal

#endif  // TESSERA_SRC_DIST_PARTITION_PACKING_H_
