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
  auto even_share = [](int64_t total, int parts, int j) {
    return total / parts + (j < total % parts ? 1 : 0);
  };
  // Each trainer's own group, as positions into `selected`.
  std::vector<std::vector<int64_t>> own(num_trainers);
  if (options.trainer_ids.empty()) {
    for (int p = 0; p < K; ++p) {
      int64_t begin =
          std::lower_bound(selected.begin(), selected.end(), offsets[p]) - selected.begin();
      int64_t size =
          (std::lower_bound(selected.begin(), selected.end(), offsets[p + 1]) - selected.begin()) -
          begin;
      for (int j = 0; j < c; ++j) {
        int64_t share = even_share(size, c, j);
        for (int64_t i = 0; i < share; ++i) own[p * c + j].push_back(begin + i);
        begin += share;
      }
    }
  } else {
    if (options.trainer_ids.size() != selected.size()) {
      return absl::InvalidArgumentError(
          fmt::format("{} trainer ids for {} selected ids", options.trainer_ids.size(), n));
    }
    int64_t max_id = -1;
    for (int64_t t : options.trainer_ids) {
      if (t < 0) return absl::InvalidArgumentError(fmt::format("negative trainer id {}", t));
      max_id = std::max(max_id, t);
    }
    // The partition was made for `made` trainers per machine.
    int64_t made = c;
    if (max_id >= num_trainers) {
      made = (max_id + K) / K;  // ceil((max_id + 1) / K)
      if (made % c != 0) {
        return absl::InvalidArgumentError(fmt::format(
            "trainer ids go up to {} ({} trainers per machine?), which cannot be merged into {} "
            "trainers per machine",
            max_id, made, c));
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      int64_t t = options.trainer_ids[i];
      int64_t machine = t / made, local = t % made / (made / c);
      own[std::min<int64_t>(machine, K - 1) * c + local].push_back(i);
    }
  }
  auto ids_of = [&](const std::vector<int64_t>& positions) {
    std::vector<int64_t> ids;
    ids.reserve(positions.size());
    for (int64_t i : positions) ids.push_back(selected[i]);
    return ids;
  };
  if (!options.force_even) return ids_of(own[rank]);
  // Quotas; own groups capped by them; surplus refills deficits, first
  // within the machine, then across machines (both in rank order).
  std::vector<int64_t> quota(num_trainers);
  for (int t = 0; t < num_trainers; ++t) quota[t] = even_share(n, num_trainers, t);
  std::vector<std::vector<int64_t>> got(num_trainers);
  std::vector<int64_t> global_pool;
  for (int m = 0; m < K; ++m) {
    std::vector<int64_t> pool;
    for (int t = m * c; t < (m + 1) * c; ++t) {
      size_t keep = static_cast<size_t>(std::min<int64_t>(quota[t], own[t].size()));
      got[t].assign(own[t].begin(), own[t].begin() + keep);
      pool.insert(pool.end(), own[t].begin() + keep, own[t].end());
    }
    size_t next = 0;
    for (int t = m * c; t < (m + 1) * c; ++t) {
      while (static_cast<int64_t>(got[t].size()) < quota[t] && next < pool.size()) {
        got[t].push_back(pool[next++]);
      }
    }
    global_pool.insert(global_pool.end(), pool.begin() + next, pool.end());
  }
  size_t next = 0;
  for (int t = 0; t < num_trainers; ++t) {
    while (static_cast<int64_t>(got[t].size()) < quota[t] && next < global_pool.size()) {
      got[t].push_back(global_pool[next++]);
    }
  }
  return ids_of(got[rank]);
}

}  // namespace tessera
