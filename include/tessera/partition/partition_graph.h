// File: include/tessera/partition/partition_graph.h
//
// PartitionGraph: DGL's partition_graph for homogeneous graphs. Assigns nodes
// to parts (METIS k-way, optionally multi-constraint, or uniformly at random),
// reshuffles node and edge ids so that every part owns one contiguous range of
// each, builds each part's local graph with `num_hops` of HALO, and writes the
// partition config plus per-part .npy files (docs/partition-format.md).
//
// Semantics (shared/reference/distdgl.md §2.4-2.5):
//  * new node order: by part, then by original id;
//  * new edge order: by new destination id, then by original edge id; an edge
//    belongs to the part of its destination;
//  * local nodes: inner nodes (new-id order), then HALO nodes in discovery
//    order; hop 1 = sources of in-edges of inner nodes, plus destinations of
//    out-edges of inner nodes (not expanded further); hop k>1 = sources of
//    in-edges of hop k-1 nodes; the local CSC holds every in-edge of every
//    inner node (inner edges, first, in global-id order), the out-edges of
//    inner nodes and the in-edges of HALO nodes up to num_hops;
//  * num_hops = 0: only in-edges whose source is inner are stored locally (the
//    edge id space and edge arrays still cover every owned edge);
//  * node/edge arrays are written for inner nodes/edges only, in new-id order;
//  * num_trainers_per_machine T > 1: parts are first made for K*T trainers,
//    stored as node array "trainer_id" (edges: the destination's), then
//    merged T at a time into K parts.
// Output is deterministic for the same input and options. On any error the
// config JSON is not written, so no partial output looks valid.
#ifndef TESSERA_INCLUDE_TESSERA_PARTITION_PARTITION_GRAPH_H_
#define TESSERA_INCLUDE_TESSERA_PARTITION_PARTITION_GRAPH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/graph/graph.h"

namespace tessera {

enum class PartMethod { kMetis, kRandom };
StatusOr<PartMethod> ParsePartMethod(const std::string& name);

// The options of both partitioners: PartitionGraph (one process, METIS) and
// the distributed one (`tessera mpi-partition`, DistPartitionOptions adds
// what only it has). Each field says where it applies.
struct PartitionOptions {
  PartMethod part_method = PartMethod::kMetis;
  int num_hops = 1;
  // Name of an integer/bool node array (e.g. "train_mask"): METIS balances the
  // count of every distinct value across parts. Empty = no such constraint.
  std::string balance_ntypes;
  // False: that array only balances and is not written (DGL's balance_ntypes
  // given as tensors, which Python passes under a name of its own).
  bool write_balance_array = true;
  // Also balance in-degree (edges per part).
  bool balance_edges = false;
  // Write orig_nids.npy / orig_eids.npy (new id -> original id).
  bool return_mapping = false;
  // Nodes are assigned to num_parts * this many parts, part p being
  // sub-parts [p T, (p + 1) T); with more than one, every part carries
  // `trainer_id` node and edge arrays (an edge: its destination's).
  int num_trainers_per_machine = 1;
  uint64_t seed = 0;
  // Serial METIS only: "cut" (edge cut) or "vol" (communication volume), and
  // its effort: refinement iterations and independent tries (best kept).
  std::string objtype = "cut";
  int metis_iterations = 10;
  int metis_cuts = 1;
  // Above 1 (part_method metis): the graph is contracted by label
  // propagation until it has this many times fewer arcs (symmetrised
  // adjacency entries) than the input, and the partitioner (METIS, or
  // PT-Scotch when distributed) partitions the contracted graph, whose parts
  // are projected back with refinement: a fraction of the partitioner's
  // memory, another output (docs/partition-format.md). The distributed
  // partitioner defaults to 8 (PT-Scotch holds about 250 bytes per arc).
  double coarsening = 1;
  // ... but graphs of at most this many arcs (per rank when distributed) are
  // left whole: their partitioner's memory is small, and contraction costs
  // some cut (on a 2000-node test graph 1.07-1.10x serial METIS's against
  // 0.82x uncontracted; 1.0001x on 600k nodes / 15M edges).
  int64_t coarsen_min_arcs = int64_t{1} << 20;
};

struct PartStats {
  int64_t inner_nodes = 0;
  int64_t halo_nodes = 0;
  int64_t inner_edges = 0;
  int64_t local_edges = 0;  // Entries of the local CSC.
  int64_t cut_edges = 0;    // Inner edges whose source belongs to another part.
};

struct PartitionResult {
  std::string config_path;
  std::vector<PartStats> parts;
  int64_t edge_cut = 0;  // Directed edges whose endpoints lie in different parts.
  double assign_seconds = 0;
  double reshuffle_seconds = 0;
  double write_seconds = 0;
};

StatusOr<PartitionResult> PartitionGraph(const Graph& graph, const std::string& graph_name,
                                         int num_parts, const std::string& out_path,
                                         const PartitionOptions& options);
// The same, consuming `graph` (the same output): its edge list (src, dst) is
// freed as soon as the last part is built (each part is built from a sweep
// over it), before the mappings and the config are written.
StatusOr<PartitionResult> PartitionGraph(Graph&& graph, const std::string& graph_name,
                                         int num_parts, const std::string& out_path,
                                         const PartitionOptions& options);

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_PARTITION_PARTITION_GRAPH_H_
