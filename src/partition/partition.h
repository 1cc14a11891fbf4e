// File: src/partition/partition.h
//
// Test hooks of the partitioner. PartitionGraph itself is declared in the
// installed include/tessera/partition/partition_graph.h.
#ifndef TESSERA_SRC_PARTITION_PARTITION_H_
#define TESSERA_SRC_PARTITION_PARTITION_H_

#include "tessera/partition/partition_graph.h"

namespace tessera {

// PartitionGraph with 64-bit ids throughout, even where 32-bit ones fit: the
// same output, by a path small graphs never take otherwise.
StatusOr<PartitionResult> TEST_PartitionGraphWideIds(const Graph& graph,
                                                     const std::string& graph_name, int num_parts,
                                                     const std::string& out_path,
                                                     const PartitionOptions& options);

}  // namespace tessera

#endif  // TESSERA_SRC_PARTITION_PARTITION_H_
