// File: src/partition/inspect.h
//
// InspectPartitions: per-part statistics of a partition on disk (what
// `tessera inspect` prints and the partition benchmark reports): inner and
// HALO nodes, inner edges, edge cut, balance of nodes, edges and of the
// balanced node array, bytes on disk. Loads each part in turn (validating it).
#ifndef TESSERA_SRC_PARTITION_INSPECT_H_
#define TESSERA_SRC_PARTITION_INSPECT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/status.h"

namespace tessera {

struct PartInspection {
  int64_t inner_nodes = 0;
  int64_t halo_nodes = 0;
  int64_t inner_edges = 0;
  int64_t local_edges = 0;
  int64_t cut_edges = 0;       // Inner edges whose source is a HALO node.
  int64_t balanced_count = 0;  // Non-zero entries of the balanced array.
  int64_t bytes_on_disk = 0;
  // Per node type / relation (one entry each on a homogeneous graph).
  std::vector<int64_t> type_nodes;      // Inner nodes of each type.
  std::vector<int64_t> type_edges;      // Inner edges of each relation.
  std::vector<int64_t> type_cut_edges;  // Of those, with a HALO source.
};

struct Inspection {
  std::string graph_name;
  std::string part_method;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  int halo_hops = 0;
  std::string balanced_array;  // Empty if none.
  std::vector<PartInspection> parts;
  int64_t edge_cut = 0;
  // max / mean over parts (1.0 = perfect balance).
  double node_balance = 0;
  double edge_balance = 0;
  double balanced_array_balance = 0;
  int64_t bytes_on_disk = 0;
  std::vector<std::string> ntypes;  // Type-id order.
  std::vector<std::string> etypes;  // Canonical, relation-id order.

  double edge_cut_fraction() const { return num_edges ? double(edge_cut) / num_edges : 0; }
  // A human-readable table.
  std::string ToText() const;
  std::string ToJson() const;
};

StatusOr<Inspection> InspectPartitions(const std::string& config_path);

}  // namespace tessera

#endif  // TESSERA_SRC_PARTITION_INSPECT_H_
