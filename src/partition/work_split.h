// File: src/partition/work_split.h
//
// SplitWork: DGL's node_split / edge_split without their pitfalls. Given the
// selected ids (e.g. the training nodes, as sorted global ids), the range
// partition of those ids over M machines, and T trainers (ranks r on machine
// r / (T / M)), every selected id goes to exactly one trainer; with
// force_even, trainer counts differ by at most one, and each trainer first
// gets ids of its own partition (as evenly as its machine's trainers can
// share them, or its trainer_ids group), then surplus ids of its machine's
// other trainers, and only then ids other machines have too many of. It is a pure
// function: every trainer computes the same assignment, and takes its own.
// Without force_even a trainer gets only its own partition's ids (a
// contiguous share of them), and counts may differ.
#ifndef TESSERA_SRC_PARTITION_WORK_SPLIT_H_
#define TESSERA_SRC_PARTITION_WORK_SPLIT_H_

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/base/status.h"

namespace tessera {

struct SplitOptions {
  bool force_even = true;
  // Optional, aligned with `selected`: the trainer each id was assigned to
  // by partitioning with num_trainers_per_machine (the `trainer_id` array,
  // global trainer ids). Ids then go to their own trainer first instead of
  // an even cut of their partition. If the partition was made for more
  // trainers per machine than run, groups are merged (the counts must
  // divide).
  std::span<const int64_t> trainer_ids;
};

// `selected`: sorted, distinct global ids. `offsets`: the K+1 range bounds of
// the id space (PartitionBook::node_offsets() or edge_offsets()). Returns the
// ids of trainer `rank` (own-partition ids first, each group sorted).
// InvalidArgument unless num_trainers is a positive multiple of K, rank is in
// range and `selected` is sorted, distinct and inside the id space.
StatusOr<std::vector<int64_t>> SplitWork(std::span<const int64_t> selected,
                                         std::span<const int64_t> offsets, int num_trainers,
                                         int rank, const SplitOptions& options = {});

// The ids where a bool/uint8 mask is non-zero, in order.
std::vector<int64_t> MaskToIds(std::span<const uint8_t> mask);

}  // namespace tessera

#endif  // TESSERA_SRC_PARTITION_WORK_SPLIT_H_
