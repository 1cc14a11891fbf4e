// File: include/tessera/partition/partition_config.h
//
// The partition config: "<out>/<graph_name>.json", with DGL's keys
// (graph_name, num_nodes, num_edges, part_method, num_parts, halo_hops,
// node_map, edge_map, ntypes, etypes, part-<i>) so that DGL users and tools
// can read it, plus a "tessera" object with what tessera adds (array names,
// trainers per machine, balance options, seed). Paths inside are relative to
// the JSON's folder. See docs/partition-format.md.
#ifndef TESSERA_INCLUDE_TESSERA_PARTITION_PARTITION_CONFIG_H_
#define TESSERA_INCLUDE_TESSERA_PARTITION_PARTITION_CONFIG_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/partition/partition_book.h"

namespace tessera {

struct PartitionConfig {
  struct PartFiles {
    std::string part_graph;  // Relative to dir, e.g. "part0/graph".
    std::string node_feats;
    std::string edge_feats;
  };

  std::string graph_name;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  std::string part_method;
  int num_parts = 0;
  int halo_hops = 1;
  // Types and their counts per partition ("ntypes", "etypes", "node_map",
  // "edge_map"); node_offsets / edge_offsets are the K+1 partition
  // boundaries they imply.
  TypeLayout layout;
  std::vector<int64_t> node_offsets;
  std::vector<int64_t> edge_offsets;
  std::vector<PartFiles> parts;
  // tessera extras (its "tessera" section; absent from DGL's configs).
  bool has_tessera_section = false;
  int num_trainers_per_machine = 1;
  // Array names, which are also their files' paths under a part's node_feats
  // / edge_feats folder (+ ".npy"). The typed layout (more than one node type
  // or relation) prefixes the type, as DGL's feature keys do:
  // "paper/feat", "author:writes:paper/weight"; the homogeneous layout has
  // plain names ("feat").
  std::vector<std::string> node_feat_names;
  std::vector<std::string> edge_feat_names;
  std::string balance_ntypes;
  bool balance_edges = false;
  uint64_t seed = 0;

  // Folder of the JSON file (set by ReadPartitionConfig); parts' paths are
  // relative to it.
  std::string dir;

  std::string PartGraphDir(int p) const { return dir + "/" + parts[p].part_graph; }
  std::string NodeFeatDir(int p) const { return dir + "/" + parts[p].node_feats; }
  std::string EdgeFeatDir(int p) const { return dir + "/" + parts[p].edge_feats; }
  StatusOr<PartitionBook> Book(int part_id) const {
    return PartitionBook::CreateTyped(layout, part_id);
  }
  // More than one node type or relation: the local graphs carry type arrays
  // and array names carry their type.
  bool typed() const { return layout.ntypes.size() != 1 || layout.etypes.size() != 1; }
  // The type index of an array name, and the name without the type: for the
  // homogeneous layout, type 0 and the name itself. InvalidArgument for a
  // typed name of an unknown type.
  StatusOr<std::pair<int, std::string>> NodeArrayType(const std::string& name) const;
  StatusOr<std::pair<int, std::string>> EdgeArrayType(const std::string& name) const;
};

// Serialises to the JSON text (pretty, deterministic key order).
std::string PartitionConfigToJson(const PartitionConfig& config);
// Reads and validates a config; accepts DGL's legacy node_map form (a list of
// range ends). Errors name the file and the key.
StatusOr<PartitionConfig> ReadPartitionConfig(const std::string& path);

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_PARTITION_PARTITION_CONFIG_H_
