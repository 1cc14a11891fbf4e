// File: include/tessera/partition/partition_book.h
//
// PartitionBook: the range partition book. After reshuffling, partition p owns
// the node ids [node_offsets[p], node_offsets[p+1]) and the edge ids
// [edge_offsets[p], edge_offsets[p+1]); owner lookup is a binary search over
// the K range ends and a local id is a subtraction.
//
// Types (DGL's RangePartitionBook, shared/reference/distdgl.md §1.12, §2.6):
// inside partition p, node type t holds one contiguous block of homogeneous
// ids, the types in type-id order, so the homogeneous id space reads
// [p0,T0) [p0,T1) ... [p1,T0) ...; per-type ids count a type's nodes in that
// order, so partition p owns per-type ids [TypedNodeOffsets(t)[p],
// TypedNodeOffsets(t)[p+1]). Edges the same with relations. A homogeneous
// graph is the one-type case (node type "_N", relation "_N:_E:_N").
// Immutable after creation; safe to share between threads.
#ifndef TESSERA_INCLUDE_TESSERA_PARTITION_PARTITION_BOOK_H_
#define TESSERA_INCLUDE_TESSERA_PARTITION_PARTITION_BOOK_H_

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/graph/graph.h"

namespace tessera {

// Counts per (partition, type): the whole type layout of a partitioned graph.
struct TypeLayout {
  std::vector<std::string> ntypes;   // Type-id order.
  std::vector<EdgeType> etypes;      // Relation-id order.
  std::vector<int64_t> node_counts;  // K x T, row-major: [p * T + t].
  std::vector<int64_t> edge_counts;  // K x R.
};

class PartitionBook {
 public:
  // Offsets have K+1 non-decreasing entries starting at 0. `part_id` is the
  // local partition (for the *ToLocal methods), in [0, K).
  static StatusOr<PartitionBook> Create(std::vector<int64_t> node_offsets,
                                        std::vector<int64_t> edge_offsets, int part_id);
  // A typed book. Counts must be non-negative and their sums fit int64.
  static StatusOr<PartitionBook> CreateTyped(TypeLayout layout, int part_id);

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

  // ---- Types.
  const TypeLayout& layout() const { return layout_; }
  int num_ntypes() const { return static_cast<int>(layout_.ntypes.size()); }
  int num_etypes() const { return static_cast<int>(layout_.etypes.size()); }
  const std::vector<std::string>& ntypes() const { return layout_.ntypes; }
  const std::vector<EdgeType>& etypes() const { return layout_.etypes; }
  // Node type t's name, or relation t's canonical name "src:rel:dst".
  std::string TypeName(bool node, int t) const {
    return node ? layout_.ntypes[t] : layout_.etypes[t].Canonical();
  }
  // Every node type's name, or every relation's canonical name.
  std::vector<std::string> TypeNames(bool node) const {
    std::vector<std::string> names;
    for (int t = 0; t < (node ? num_ntypes() : num_etypes()); ++t)
      names.push_back(TypeName(node, t));
    return names;
  }
  // One node type and one relation (the homogeneous layout).
  bool is_homogeneous() const { return num_ntypes() == 1 && num_etypes() == 1; }
  StatusOr<int> NodeTypeId(const std::string& ntype) const {
    return FindNodeType(layout_.ntypes, ntype);
  }
  StatusOr<int> EdgeTypeId(const std::string& etype) const {
    return FindEdgeType(layout_.etypes, etype);
  }
  // Homogeneous ids of type t inside partition p.
  std::pair<int64_t, int64_t> NodeTypeRange(int t, int p) const {
    int64_t s = node_type_starts_[p * num_ntypes() + t];
    return {s, s + layout_.node_counts[p * num_ntypes() + t]};
  }
  std::pair<int64_t, int64_t> EdgeTypeRange(int r, int p) const {
    int64_t s = edge_type_starts_[p * num_etypes() + r];
    return {s, s + layout_.edge_counts[p * num_etypes() + r]};
  }
  // K+1 per-type offsets: partition p owns per-type ids [o[p], o[p+1]).
  const std::vector<int64_t>& TypedNodeOffsets(int t) const { return typed_node_offsets_[t]; }
  const std::vector<int64_t>& TypedEdgeOffsets(int r) const { return typed_edge_offsets_[r]; }
  int64_t NumNodesOfType(int t) const { return typed_node_offsets_[t].back(); }
  int64_t NumEdgesOfType(int r) const { return typed_edge_offsets_[r].back(); }
  // Homogeneous id -> (type, per-type id) and back. Preconditions: ids in
  // range (per-type: [0, NumNodesOfType(t))).
  std::pair<int, int64_t> MapToPerNtype(int64_t nid) const;
  std::pair<int, int64_t> MapToPerEtype(int64_t eid) const;
  int64_t MapToHomoNid(int t, int64_t id) const;
  int64_t MapToHomoEid(int r, int64_t id) const;
  // Owner partition of a per-type id.
  int TypedNodeOwner(int t, int64_t id) const { return Owner(typed_node_offsets_[t], id); }

 private:
  static int Owner(const std::vector<int64_t>& offsets, int64_t id);
  struct Side {
    std::vector<int64_t> offsets, starts;
    std::vector<std::vector<int64_t>> typed;
  };
  static StatusOr<Side> Derive(const std::vector<int64_t>& counts, int num_types, int k,
                               const char* what);
  static std::pair<int, int64_t> ToPerType(const std::vector<int64_t>& offsets,
                                           const std::vector<int64_t>& starts,
                                           const std::vector<std::vector<int64_t>>& typed,
                                           int num_types, int64_t id);

  TypeLayout layout_;
  std::vector<int64_t> node_type_starts_, edge_type_starts_;  // K x T homogeneous starts.
  std::vector<std::vector<int64_t>> typed_node_offsets_, typed_edge_offsets_;
  std::vector<int64_t> node_offsets_;
  std::vector<int64_t> edge_offsets_;
  int part_id_ = 0;
};

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_PARTITION_PARTITION_BOOK_H_
