// File: src/kvstore/id_groups.h
//
// Ids of a request grouped by the machine that owns them (SplitByOwner), and
// one machine's ids sorted and deduplicated (GroupIds): how a client turns
// the caller's ids into requests to each machine and places the answers
// back in the caller's order. Pure functions of the partition book. And a
// server's repeated seeds (FindRepeats, RepeatEdges).
#ifndef TESSERA_SRC_KVSTORE_ID_GROUPS_H_
#define TESSERA_SRC_KVSTORE_ID_GROUPS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "src/sampling/neighbor_sampler.h"
#include "src/shm/catalog.h"
#include "tessera/base/status.h"
#include "tessera/partition/partition_book.h"

namespace tessera::kvstore {

// Ids grouped by owning machine, with their positions in the caller's order.
struct OwnerSplit {
  std::vector<std::vector<int64_t>> ids;        // Per machine.
  std::vector<std::vector<int64_t>> positions;  // Per machine.
};
// `ids` (of `policy` and type: kAllTypes for global ids) by owner;
// OutOfRange naming `what` and the position of an id out of range.
StatusOr<OwnerSplit> SplitByOwner(const PartitionBook& book, shm::Policy policy, int type,
                                  const std::string& what, std::span<const int64_t> ids);

// One machine's ids sorted and deduplicated: ids[u] is wanted at
// positions[group_start[u] .. group_start[u+1]).
struct GroupedIds {
  std::vector<int64_t> ids;
  std::vector<size_t> group_start;
  std::vector<int64_t> positions;
};
// `ids` (all within `range`, the owner's [first, end) ids) with their
// `positions`: a counting sort when the range is small, else a sort.
GroupedIds GroupIds(const std::vector<int64_t>& ids, const std::vector<int64_t>& positions,
                    std::pair<int64_t, int64_t> range);

// A server's request ids with repeats removed, in first-seen order:
// ids[index[i]] is request id i. Empty ids: none repeats.
struct DistinctIds {
  std::vector<int64_t> ids;
  std::vector<int64_t> index;
};
// `bits` is a bitmap over the owned ids [range.first, range.second), all
// clear (resized as needed), and is left clear: the common case, no
// repeats, is two passes over the ids and no allocation. Ids outside the
// range are kept as given (the caller refuses them).
DistinctIds FindRepeats(std::span<const int64_t> ids, std::pair<int64_t, int64_t> range,
                        std::vector<uint64_t>& bits);

// The sampled edges of distinct seeds (with per-seed offsets) repeated for
// each request seed: seed i gets the edges of seed index[i].
sampling::SampledEdges RepeatEdges(const sampling::SampledEdges& edges,
                                   std::span<const int64_t> index);

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_ID_GROUPS_H_
