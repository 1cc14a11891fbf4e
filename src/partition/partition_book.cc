#include "src/partition/partition_book.h"

#include <algorithm>

#include "src/base/strings.h"

namespace tessera {

StatusOr<PartitionBook> PartitionBook::Create(std::vector<int64_t> node_offsets,
                                              std::vector<int64_t> edge_offsets, int part_id) {
  if (node_offsets.size() < 2 || node_offsets.size() != edge_offsets.size()) {
    return absl::InvalidArgumentError("partition book: node and edge maps need K+1 offsets each");
  }
  for (const auto* offsets : {&node_offsets, &edge_offsets}) {
    if ((*offsets)[0] != 0 || !std::is_sorted(offsets->begin(), offsets->end())) {
      return absl::InvalidArgumentError(
          "partition book: ranges must start at 0 and be contiguous and ordered");
    }
  }
  int k = static_cast<int>(node_offsets.size()) - 1;
  if (part_id < 0 || part_id >= k) {
    return absl::InvalidArgumentError(
        StrCat("partition book: part id ", part_id, " is not in [0, ", k, ")"));
  }
  PartitionBook book;
  book.node_offsets_ = std::move(node_offsets);
  book.edge_offsets_ = std::move(edge_offsets);
  book.part_id_ = part_id;
  return book;
}

int PartitionBook::Owner(const std::vector<int64_t>& offsets, int64_t id) {
  // The last range start <= id; empty partitions (equal starts) are skipped.
  auto it = std::upper_bound(offsets.begin() + 1, offsets.end(), id);
  return static_cast<int>(it - offsets.begin()) - 1;
}

void PartitionBook::NodeOwners(std::span<const int64_t> nids, std::span<int32_t> owners) const {
  for (size_t i = 0; i < nids.size(); ++i) owners[i] = NodeOwner(nids[i]);
}

}  // namespace tessera
