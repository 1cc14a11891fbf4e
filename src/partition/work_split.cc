// File: src/partition/work_split.cc
#include "src/partition/work_split.h"

#include <algorithm>

#include "fmt/format.h"

namespace tessera {

std::vector<int64_t> MaskToIds(std::span<const uint8_t> mask) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) ids.push_back(static_cast<int64_t>(i));
  }
  return ids;
}

StatusOr<std::vector<int64_t>> SplitWork(std::span<const int64_t> selected,
                                         std::span<const int64_t> offsets, int num_trainers,
                                         int rank, const SplitOptions& options) {
  int K = static_cast<int>(offsets.size()) - 1;
  if (K < 1) return absl::InvalidArgumentError("the partition book has no partitions");
  if (num_trainers < 1 || num_trainers % K != 0) {
    return absl::InvalidArgumentError(
        fmt::format("{} trainers cannot be spread evenly over {} machines (need a multiple of {})",
                    num_trainers, K, K));
  }
  if (rank < 0 || rank >= num_trainers) {
    return absl::InvalidArgumentError(fmt::format("rank {} of {} trainers", rank, num_trainers));
  }
  for (size_t i = 0; i < selected.size(); ++i) {
    if (selected[i] < offsets[0] || selected[i] >= offsets[K] ||
        (i > 0 && selected[i] <= selected[i - 1])) {
      return absl::InvalidArgumentError(
          fmt::format("selected ids must be sorted, distinct and in [0, {}); position {} holds {}",
                      offsets[K], i, selected[i]));
    }
  }
  int c = num_trainers / K;  // Trainers per machine.
  int64_t n = static_cast<int64_t>(selected.size());
  // The selected ids of partition p are selected[part_begin[p] .. part_begin[p+1]).
  std::vector<int64_t> part_begin(K + 1);
  for (int p = 0; p <= K; ++p) {
    part_begin[p] =
        std::lower_bound(selected.begin(), selected.end(), offsets[p]) - selected.begin();
  }
  auto even_share = [](int64_t total, int parts, int j) {
    return total / parts + (j < total % parts ? 1 : 0);
  };
  if (!options.force_even) {
    int p = rank / c, j = rank % c;
    int64_t size = part_begin[p + 1] - part_begin[p];
    int64_t begin = part_begin[p];
    for (int k = 0; k < j; ++k) begin += even_share(size, c, k);
    return std::vector<int64_t>(selected.begin() + begin,
                                selected.begin() + begin + even_share(size, c, j));
  }
  // Quota of each trainer; own shares first, capped by the quota.
  std::vector<int64_t> quota(num_trainers), own_begin(num_trainers), own_size(num_trainers);
  for (int t = 0; t < num_trainers; ++t) quota[t] = even_share(n, num_trainers, t);
  std::vector<std::pair<int64_t, int64_t>> leftovers;  // [begin, end) ranges of `selected`.
  for (int p = 0; p < K; ++p) {
    int64_t size = part_begin[p + 1] - part_begin[p];
    int64_t cursor = part_begin[p];
    for (int j = 0; j < c; ++j) {
      int t = p * c + j;
      int64_t share = even_share(size, c, j);
      own_begin[t] = cursor;
      own_size[t] = std::min(share, quota[t]);
      if (share > own_size[t]) leftovers.push_back({cursor + own_size[t], cursor + share});
      cursor += share;
    }
  }
  // Leftovers fill the deficits in rank order.
  std::vector<int64_t> result(selected.begin() + own_begin[rank],
                              selected.begin() + own_begin[rank] + own_size[rank]);
  size_t range = 0;
  int64_t in_range = leftovers.empty() ? 0 : leftovers[0].first;
  for (int t = 0; t < num_trainers; ++t) {
    int64_t deficit = quota[t] - own_size[t];
    while (deficit > 0 && range < leftovers.size()) {
      int64_t take = std::min(deficit, leftovers[range].second - in_range);
      if (t == rank) {
        result.insert(result.end(), selected.begin() + in_range,
                      selected.begin() + in_range + take);
      }
      in_range += take;
      deficit -= take;
      if (in_range == leftovers[range].second && ++range < leftovers.size()) {
        in_range = leftovers[range].first;
      }
    }
  }
  return result;
}

}  // namespace tessera
