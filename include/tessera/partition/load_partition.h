// File: include/tessera/partition/load_partition.h
//
// LoadPartition: reads one part of a partition written by PartitionGraph (or
// any writer of the same format): the local graph (CSC over local nodes,
// inner nodes first), its node and edge arrays, and the PartitionBook. Arrays
// are memory-mapped, not copied. Every file is validated (dtypes, shapes,
// index ranges, consistency with the config), so a corrupt or mismatched part
// is an error naming the file, never a crash later.
#ifndef TESSERA_INCLUDE_TESSERA_PARTITION_LOAD_PARTITION_H_
#define TESSERA_INCLUDE_TESSERA_PARTITION_LOAD_PARTITION_H_

#include <map>
#include <span>
#include <string>

#include "tessera/base/status.h"
#include "tessera/graph/array.h"
#include "tessera/partition/partition_book.h"
#include "tessera/partition/partition_config.h"

namespace tessera {

struct LocalPartition {
  int part_id = 0;
  PartitionConfig config;
  PartitionBook book;
  // part<i>/graph arrays.
  Array nid;         // int64 [num_local]: new global id of each local node.
  Array inner_node;  // uint8 [num_local]
  Array indptr;      // int64 [num_local + 1]
  Array indices;     // int64 [num_local_edges]: local id of each in-edge's source.
  Array eid;         // int64 [num_local_edges]: new global edge id.
  Array inner_edge;  // uint8 [num_local_edges]
  // Typed layout only (config.typed()), else empty: DGL's _TYPE arrays.
  Array ntype;  // int16 [num_local]: node type of each local node.
  Array etype;  // int32 [num_local_edges]: relation of each stored edge.
  // part<i>/node_feat and edge_feat arrays (inner rows, new-id order), keyed
  // by the config's names ("feat", or "paper/feat" in the typed layout; a
  // typed array has a row for each of the part's nodes of its type).
  std::map<std::string, Array> node_data;
  std::map<std::string, Array> edge_data;

  int64_t num_local_nodes() const { return nid.rows(); }
  int64_t num_inner_nodes() const { return book.NumNodesOf(part_id); }
  int64_t num_local_edges() const { return indices.rows(); }
  std::span<const int64_t> nids() const { return nid.span<int64_t>(); }
  std::span<const int64_t> indptrs() const { return indptr.span<int64_t>(); }
  std::span<const int64_t> src_locals() const { return indices.span<int64_t>(); }
  std::span<const int64_t> eids() const { return eid.span<int64_t>(); }
};

// What LoadPartition reads (the config and the partition book always).
struct LoadOptions {
  bool load_graph = true;       // The part's graph arrays (nid ... etype), checked.
  bool load_node_feats = true;  // node_data
  bool load_edge_feats = true;  // edge_data
};

StatusOr<LocalPartition> LoadPartition(const std::string& config_path, int part_id,
                                       const LoadOptions& options = {});

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_PARTITION_LOAD_PARTITION_H_
