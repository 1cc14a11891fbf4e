// File: include/tessera/partition.h
//
// The public partitioning API, with DGL's names:
//
//   auto graph = tessera::read_graph("data/products");             // npy, CSV or OGB
//   tessera::PartitionOptions options;
//   options.balance_ntypes = "train_mask";
//   options.balance_edges = true;
//   auto result = tessera::partition_graph(*graph, "products", 4, "parts/", options);
//   auto part = tessera::load_partition("parts/products.json", 0);
//
// Errors are returned as absl::Status values that name the file or the option
// at fault; nothing here throws or aborts on bad input. The functions are safe
// to call from several threads on different outputs.
#ifndef TESSERA_INCLUDE_TESSERA_PARTITION_H_
#define TESSERA_INCLUDE_TESSERA_PARTITION_H_

#include <string>

#include "tessera/graph/readers.h"
#include "tessera/partition/load_partition.h"
#include "tessera/partition/partition_graph.h"

namespace tessera {

// Reads a graph folder or edge list (see ReadOptions for the transforms).
inline StatusOr<Graph> read_graph(const std::string& path, const ReadOptions& options = {}) {
  return ReadGraph(path, options);
}

// DGL's partition_graph: writes <out_path>/<graph_name>.json and part<i>/...
// (docs/partition-format.md). Deterministic for the same input and options.
inline StatusOr<PartitionResult> partition_graph(const Graph& graph, const std::string& graph_name,
                                                 int num_parts, const std::string& out_path,
                                                 const PartitionOptions& options = {}) {
  return PartitionGraph(graph, graph_name, num_parts, out_path, options);
}

// DGL's load_partition: the local graph, node and edge arrays (memory-mapped)
// and the partition book of part `part_id`, validated.
inline StatusOr<LocalPartition> load_partition(const std::string& config_path, int part_id,
                                               const LoadOptions& options = {}) {
  return LoadPartition(config_path, part_id, options);
}

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_PARTITION_H_
