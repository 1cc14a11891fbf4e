// File: src/partition/coarsen.h
//
// Multilevel contraction for `tessera partition --coarsening` (one
// process): METIS keeps every level of its own coarsening, which on graphs
// whose edges rarely merge costs about 60 bytes per edge (bench/README.md).
// With --coarsening the graph METIS gets is first contracted here, in 32-bit
// arrays, by size-constrained label propagation (as mpi-partition does
// across ranks, src/dist_partition/dist_coarsen.cc); METIS partitions the
// coarsest graph, and the parts are projected back level by level, each
// level refined by moves that cut fewer edges without breaking the balance.
//
// Graphs are METIS's input layout: symmetric, no self loops, one entry per
// neighbour; row v is adjncy[xadj[v] .. xadj[v+1]) with weights adjwgt, and
// vertex weights vwgt are row-major [num_nodes, ncon].
#ifndef TESSERA_SRC_PARTITION_COARSEN_H_
#define TESSERA_SRC_PARTITION_COARSEN_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "tessera/base/status.h"

namespace tessera {

struct CsrView {
  std::span<const int32_t> xadj, adjncy, adjwgt, vwgt;
  int ncon = 1;
  int64_t num_nodes() const { return static_cast<int64_t>(xadj.size()) - 1; }
  int64_t num_entries() const { return static_cast<int64_t>(adjncy.size()); }
};

// A malloc'd array: the adjacency of a level is written into a block sized
// for the finer level's entries and shrunk in place (only the pages written
// become resident).
struct FreeDeleter {
  void operator()(int32_t* p) const { std::free(p); }
};
using MallocInt32 = std::unique_ptr<int32_t[], FreeDeleter>;

// One level of contraction of a finer graph.
struct CoarseLevel {
  std::vector<int32_t> xadj;
  MallocInt32 adjncy, adjwgt;
  int64_t num_entries = 0;
  std::vector<int32_t> vwgt;  // Sums of the clusters' vertex weights.
  std::vector<int32_t> size;  // Finest-level nodes in each coarse node.
  std::vector<int32_t> cmap;  // Finer node -> coarse node.
  int ncon = 1;
  CsrView view() const;
};

// Clusters `g`'s nodes by label propagation (a node joins the neighbouring
// cluster it has most edge weight to; no cluster holds more than
// max_cluster_size of `size`) and contracts every cluster into one node:
// vertex weights and sizes summed, entries between the same two clusters
// merged with their weights summed, entries inside a cluster dropped.
// Edge weights must be positive (as METIS's). ResourceExhausted if a summed
// vertex weight or a merged edge weight exceeds 32 bits.
StatusOr<CoarseLevel> Contract(const CsrView& g, std::span<const int32_t> size,
                               int64_t max_cluster_size);

// Moves nodes of `g` to the part they have most edge weight to, when that
// cuts less, without taking any part over max(floor(imbalance * average),
// ceil(average)) of any constraint nor under floor(average / 2) (a node may
// leave a part over the upper limit at no cost in cut); a few passes.
// Returns the number of moves.
int64_t RefineParts(const CsrView& g, int num_parts, double imbalance, std::span<int32_t> part);

// The weighted edge cut of `part` (each cut entry once per direction).
int64_t WeightedCut(const CsrView& g, std::span<const int32_t> part);

}  // namespace tessera

#endif  // TESSERA_SRC_PARTITION_COARSEN_H_
