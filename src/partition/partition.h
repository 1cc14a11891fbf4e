// File: src/partition/partition.h
//
// Moved to include/tessera/core/partition_graph.h: it is part of the installed API (the public
// headers include it). This forwarding header keeps the project's includes as they were, and
// declares what only tests use.
#ifndef TESSERA_SRC_PARTITION_PARTITION_H_
#define TESSERA_SRC_PARTITION_PARTITION_H_

#include "tessera/core/partition_graph.h"  // IWYU pragma: export

namespace tessera {

// PartitionGraph with 64-bit ids throughout, even where 32-bit ones fit: the
// same output, by a path small graphs never take otherwise.
StatusOr<PartitionResult> TEST_PartitionGraphWideIds(const Graph& graph,
                                                     const std::string& graph_name, int num_parts,
                                                     const std::string& out_path,
                                                     const PartitionOptions& options);

}  // namespace tessera

#endif  // TESSERA_SRC_PARTITION_PARTITION_H_
