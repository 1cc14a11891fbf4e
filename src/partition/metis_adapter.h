// File: src/partition/metis_adapter.h
//
// The only user of metis.h. Runs METIS k-way partitioning on the symmetrised,
// loop-free, duplicate-free version of a graph, with optional multi-constraint
// vertex weights. Debian's METIS uses 32-bit indices, so graphs whose
// symmetric adjacency exceeds 2^31-1 entries are rejected with a clear error
// instead of overflowing (see ParMETIS#8 in shared/reference/distdgl.md).
//
// Memory: the input METIS gets (xadj, adjncy, adjwgt: 4 bytes each per node,
// per distinct neighbour and per distinct neighbour) is built holding at most
// every directed entry once plus the weights, the edge list's mapped pages
// dropped as they are read; METIS then allocates its coarsened graphs on top
// of it, which on graphs whose edges rarely merge is several times its input
// (bench/README.md). The log names both. MetisOptions::coarsening gives METIS
// a contracted graph instead.
#ifndef TESSERA_SRC_PARTITION_METIS_ADAPTER_H_
#define TESSERA_SRC_PARTITION_METIS_ADAPTER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/graph/graph.h"

namespace tessera {

struct MetisOptions {
  int num_parts = 2;
  uint64_t seed = 0;
  bool minimize_volume = false;  // objtype "vol" instead of "cut".
  // Row-major [num_nodes, num_constraints] vertex weights; empty = unit
  // weights with one constraint.
  std::vector<int32_t> vertex_weights;
  int num_constraints = 1;
  // Allowed load imbalance per constraint (METIS ufactor / 1000 + 1).
  double imbalance = 1.03;
  // METIS_OPTION_NITER (refinement iterations per level) and
  // METIS_OPTION_NCUTS (independent partitionings; the best is kept).
  int refine_iterations = 10;
  int num_cuts = 1;
  // With coarsening > 1 (`tessera partition --coarsening`), the graph is
  // first contracted (coarsen.h) while its adjacency holds more than
  // 1/coarsening of the input's entries and more than coarsen_min_entries;
  // METIS partitions the coarsest graph and the parts are projected back
  // with refinement. Another output than METIS on the whole graph, in a
  // fraction of the memory.
  double coarsening = 1;
  int64_t coarsen_min_entries = int64_t{1} << 20;
};

// Returns the part of every node, in [0, options.num_parts).
StatusOr<std::vector<int32_t>> MetisPartition(const Graph& graph, const MetisOptions& options);

}  // namespace tessera

#endif  // TESSERA_SRC_PARTITION_METIS_ADAPTER_H_
