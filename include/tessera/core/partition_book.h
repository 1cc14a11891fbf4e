// File: include/tessera/core/partition_book.h
//
// PartitionBook: the range partition book. After reshuffling, partition p owns
// the node ids [node_offsets[p], node_offsets[p+1]) and the edge ids
// [edge_offsets[p], edge_offsets[p+1]); owner lookup is a binary search over
// the K range ends and a local id is a subtraction. Immutable after creation;
// safe to share between threads.
#ifndef TESSERA_INCLUDE_TESSERA_CORE_PARTITION_BOOK_H_
#define TESSERA_INCLUDE_TESSERA_CORE_PARTITION_BOOK_H_

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "tessera/core/status.h"

namespace tessera {

class PartitionBook {
 public:
  // Offsets have K+1 non-decreasing entries starting at 0. `part_id` is the
  // local partition (for the *ToLocal methods), in [0, K).
  static StatusOr<PartitionBook> Create(std::vector<int64_t> node_offsets,
                                        std::vector<int64_t> edge_offsets, int part_id);

  int num_partitions() const { return static_cast<int>(node_offsets_.size()) - 1; }
  int part_id() const { return part_id_; }
  int64_t num_nodes() const { return node_offsets_.back(); }
  int64_t num_edges() const { return edge_offsets_.back(); }

  // Owner of a global id. Precondition: id in [0, num_nodes()) / [0, num_edges()).
  int NodeOwner(int64_t nid) const { return Owner(node_offsets_, nid); }
  int EdgeOwner(int64_t eid) const { return Owner(edge_offsets_, eid); }
  void NodeOwners(std::span<const int64_t> nids, std::span<int32_t> owners) const;

  // [start, end) of partition p.
  std::pair<int64_t, int64_t> NodeRange(int p) const {
    return {node_offsets_[p], node_offsets_[p + 1]};
  }
  std::pair<int64_t, int64_t> EdgeRange(int p) const {
    return {edge_offsets_[p], edge_offsets_[p + 1]};
  }
  int64_t NumNodesOf(int p) const { return node_offsets_[p + 1] - node_offsets_[p]; }
  int64_t NumEdgesOf(int p) const { return edge_offsets_[p + 1] - edge_offsets_[p]; }

  // Offset inside the local partition. Precondition: owned by part_id().
  int64_t NodeToLocal(int64_t nid) const { return nid - node_offsets_[part_id_]; }
  int64_t EdgeToLocal(int64_t eid) const { return eid - edge_offsets_[part_id_]; }

  const std::vector<int64_t>& node_offsets() const { return node_offsets_; }
  const std::vector<int64_t>& edge_offsets() const { return edge_offsets_; }

 private:
  static int Owner(const std::vector<int64_t>& offsets, int64_t id);
  std::vector<int64_t> node_offsets_;
  std::vector<int64_t> edge_offsets_;
  int part_id_ = 0;
};

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_CORE_PARTITION_BOOK_H_
