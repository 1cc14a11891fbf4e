// File: src/dist_partition/dist_internal.h
//
// The steps of DistPartitionGraph (dist_partition.h) and the state they pass
// on. Internal to src/dist_partition. Every function here is collective
// unless it says otherwise: all ranks call it in the same order.
#ifndef TESSERA_SRC_DIST_PARTITION_DIST_INTERNAL_H_
#define TESSERA_SRC_DIST_PARTITION_DIST_INTERNAL_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "src/dist_partition/chunked_graph.h"
#include "src/dist_partition/comm.h"
#include "src/dist_partition/packing.h"
#include "src/partition/partition.h"
#include "src/partition/partition_util.h"
#include "tessera/base/status.h"
#include "tessera/base/strings.h"

namespace tessera::dist_partition::internal {

// `total` items over `n` ranks as evenly as possible: the n + 1 bounds.
std::vector<int64_t> EvenBounds(int64_t total, int n);

// Which rank holds what, before and after the reshuffle.
struct Layout {
  int num_ranks = 1;
  int rank = 0;
  int num_parts = 1;
  std::vector<int64_t> home;   // P + 1: original node ids homed on each rank.
  std::vector<int64_t> reads;  // P + 1: edge positions each rank reads.

  int parts_per_rank() const { return num_parts / num_ranks; }
  int RankOfPart(int part) const { return part / parts_per_rank(); }
  int first_part() const { return rank * parts_per_rank(); }
  int end_part() const { return (rank + 1) * parts_per_rank(); }
  int HomeOf(int64_t node) const { return Bucket(home, node); }
  int64_t home_begin() const { return home[rank]; }
  int64_t home_end() const { return home[rank + 1]; }
};

// The id spaces after the reshuffle: what the partition config records.
struct IdLayout {
  int num_ntypes = 1;
  int num_etypes = 1;
  std::vector<int64_t> node_offsets, edge_offsets;  // K + 1.
  std::vector<int64_t> node_counts, edge_counts;    // K x T and K x R.

  int PartOfNode(int64_t id) const { return Bucket(node_offsets, id); }
  int PartOfEdge(int64_t eid) const { return Bucket(edge_offsets, eid); }
  // First new id of type t's block of part p (relation t's for edges).
  int64_t NodeBlock(int p, int t) const {
    return TypeBlockStart(node_offsets, node_counts, num_ntypes, p, t);
  }
  int64_t EdgeBlock(int p, int t) const {
    return TypeBlockStart(edge_offsets, edge_counts, num_etypes, p, t);
  }
  // The type of a new node id / relation of a new edge id.
  int NodeTypeOf(int64_t id) const {
    return BlockTypeOf(node_offsets, node_counts, num_ntypes, id);
  }
  int RelationOf(int64_t eid) const {
    return BlockTypeOf(edge_offsets, edge_counts, num_etypes, eid);
  }
};

// This rank's nodes after the reshuffle (its parts' new ids, contiguous).
struct OwnedNodes {
  int64_t begin = 0, end = 0;
  std::vector<int64_t> orig;  // new id - begin -> original id.
};

// The edges whose destination this rank owns, as a CSC over its nodes; in a
// row, entries by increasing new edge id.
struct OwnedEdges {
  int64_t begin = 0, end = 0;   // New edge ids owned (contiguous).
  std::vector<int64_t> in_ptr;  // Owned nodes + 1.
  std::vector<int64_t> src;     // New source id of each entry.
  std::vector<int64_t> eid;     // New edge id of each entry.
  std::vector<int64_t> orig;    // new edge id - begin -> original edge position.
};

// What the reshuffle leaves for the later steps.
struct Shuffled {
  IdLayout ids;
  OwnedNodes nodes;
  OwnedEdges edges;
  // Routing of the arrays: the part of every home node, and the rank every
  // read edge went to.
  std::vector<int32_t> home_part;
  std::vector<int32_t> edge_dest;
  // With trainers per machine (has_trainers, the same on every rank): the
  // sub-part (trainer_id) of every owned node and owned edge (its
  // destination's), by new id - begin.
  bool has_trainers = false;
  std::vector<int32_t> node_trainer, edge_trainer;
};

// With trainers per machine (home_trainer: every home node's sub-part):
// fills s.node_trainer and s.edge_trainer; needs s.edges' CSC.
Status SpreadTrainers(Comm& comm, const Layout& layout, std::span<const int32_t> home_trainer,
                      Shuffled& s);

// The symmetrised graph over this rank's home nodes, as ParMETIS takes it
// (no self loops, one entry per neighbour; weight = directed edges between
// the two nodes, which makes the weighted cut the directed edge cut), and
// the in-degree of every home node.
struct Adjacency {
  std::vector<int64_t> xadj;    // Home nodes + 1.
  std::vector<int64_t> adjncy;  // Original ids of the neighbours.
  std::vector<int64_t> adjwgt;
  std::vector<int64_t> in_degree;
};
// Consumes `edges` (the rank's read edges): they are freed as soon as the
// half edges are placed, before the rows are compacted.
StatusOr<Adjacency> BuildAdjacency(Comm& comm, const Layout& layout, EdgeSlice edges);

// The balance class of every home node (as PartitionGraph's METIS
// constraints): one class per node type, split by the values of node array
// `balance_ntypes` on the types that have it. At most 64 classes.
struct BalanceClasses {
  std::vector<int32_t> of_home;
  int num_classes = 1;
};
StatusOr<BalanceClasses> ClassesOf(Comm& comm, const ChunkedGraph& graph, const Layout& layout,
                                   const std::string& balance_ntypes);

// Step 2 with part_method metis: PT-Scotch's distributed k-way
// (SCOTCH_dgraphPart with its default strategy, 3 % imbalance; one
// constraint: `vertex_weight` (one per home node) if `weighted`, the same on
// every rank, else unit weights) over `adjacency`. Needs an MPI Comm.
StatusOr<std::vector<int32_t>> ScotchParts(Comm& comm, const Layout& layout, Adjacency& adjacency,
                                           bool weighted, std::span<const int64_t> vertex_weight,
                                           uint64_t seed);

// One level of coarsening for part_method metis (dist_coarsen.cc): the
// home nodes of `layout` clustered by size-constrained label propagation
// (no cluster weighs more than max_cluster_weight in `weight`), and the
// clusters contracted into a coarse graph (weights summed, arcs between the
// same two clusters merged, arcs inside a cluster dropped) whose nodes are
// homed on the rank that homes their cluster's label.
struct Coarse {
  Layout layout;                        // Coarse nodes per rank (reads: the same).
  Adjacency graph;                      // Over the coarse home nodes; no in_degree.
  std::vector<int64_t> weight;          // Per coarse home node.
  std::vector<int64_t> coarse_of_home;  // The coarse id of every home node of the finer level.
};
StatusOr<Coarse> Coarsen(Comm& comm, const Layout& layout, const Adjacency& adjacency,
                         std::span<const int64_t> weight, int64_t max_cluster_weight,
                         uint64_t seed);

// The part of every home node of the finer level: its coarse node's part
// (`coarse_part`: per coarse home node).
StatusOr<std::vector<int32_t>> Project(Comm& comm, const Coarse& coarse,
                                       std::span<const int32_t> coarse_part);

// Label-propagation refinement of `home_part`: nodes move to the part they
// have most edge weight to, when that cuts less, without taking any part
// over max(floor(1.03 * average), ceil(average)) of `weight` (nodes leave a
// part above it if that costs no cut). Returns the number of moves.
StatusOr<int64_t> RefineParts(Comm& comm, const Layout& layout, const Adjacency& adjacency,
                              std::span<const int64_t> weight, std::vector<int32_t>& home_part);

// Moves the fewest nodes it can, preferring those whose move cuts the fewest
// edges, so that every part holds at most max(ceil(1.03 * average), average
// + 1) nodes of every class (PT-Scotch's ParMETIS interface balances one
// weight only; METIS balances each class within 3 %). Returns the number of
// nodes moved.
StatusOr<int64_t> RepairBalance(Comm& comm, const Layout& layout, const Adjacency& adjacency,
                                const BalanceClasses& classes, std::vector<int32_t>& home_part);

// The values of `ids` (original ids homed anywhere) in `home_values` (one
// per home node) of their home ranks; in rounds of bounded size.
template <typename T>
StatusOr<std::vector<T>> LookUp(Comm& comm, const Layout& layout, std::span<const int64_t> ids,
                                std::span<const T> home_values) {
  const int64_t batch =
      std::max<int64_t>(1, comm.round_bytes() / static_cast<int64_t>(sizeof(int64_t)));
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<T> out(n);
  ASSIGN_OR_RETURN(int64_t rounds, AllMax(comm, (n + batch - 1) / batch));
  const int64_t base = layout.home_begin();
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t begin = std::min(n, round * batch), end = std::min(n, begin + batch);
    std::vector<int32_t> home(end - begin);
    for (int64_t i = begin; i < end; ++i) home[i - begin] = layout.HomeOf(ids[i]);
    Packing packing = PackBy(home, layout.num_ranks);
    Free(home);
    std::vector<int64_t> asked = Pack<int64_t>(packing, [&](int64_t i) { return ids[begin + i]; });
    ASSIGN_OR_RETURN(Received<int64_t> questions, Exchange<int64_t>(comm, asked, packing.counts));
    Free(asked);
    std::vector<T> values(questions.data.size());
    for (size_t k = 0; k < values.size(); ++k) {
      const int64_t at = questions.data[k] - base;
      if (at < 0 || at >= static_cast<int64_t>(home_values.size())) {
        return absl::InternalError(
            StrCat("id ", questions.data[k], " asked of the wrong home rank"));
      }
      values[k] = home_values[at];
    }
    Free(questions.data);
    ASSIGN_OR_RETURN(Received<T> answers, Exchange<T>(comm, values, questions.counts));
    for (size_t k = 0; k < packing.order.size(); ++k) {
      out[begin + packing.order[k]] = answers.data[k];
    }
  }
  return out;
}

// Step 3 (reshuffle): consumes `edges` (the rank's read edges) and
// `home_part`.
StatusOr<Shuffled> Reshuffle(Comm& comm, const ChunkedGraph& graph, const Layout& layout,
                             std::vector<int32_t> home_part, EdgeSlice edges);

// One part's local graph, as written to part<p>/graph (partition-format.md).
struct LocalGraph {
  std::vector<int64_t> nid;  // Local -> new id; inner nodes first.
  std::vector<int64_t> indptr, indices, eid;
  std::vector<uint8_t> inner_edge;
  int64_t num_inner = 0;
  int64_t cut_edges = 0;
};

// Step 4: the local graph of each of this rank's parts, in part order, built
// one at a time (every rank its i-th part together: deeper hops are
// collective) and handed to `consume` (then freed) before the next is built;
// `consume`'s errors are agreed on. Returns the parts' statistics.
StatusOr<std::vector<PartStats>> BuildLocalGraphs(
    Comm& comm, const Layout& layout, const Shuffled& shuffled, int num_hops,
    const std::function<Status(int part, const LocalGraph& graph)>& consume);

// Step 5, not collective: part p's graph files (graph_dir is created).
Status WriteLocalGraph(const std::string& graph_dir, const LocalGraph& g, const IdLayout& ids,
                       bool typed);

// Step 5: every node and edge array, moved to its owners and written into
// their parts' folders (node_feat/, edge_feat/ under part_dirs[p - first]).
// Returns the array names as the config lists them.
struct ArrayNames {
  std::vector<std::string> node, edge;
};
// With s.has_trainers, every part also gets `trainer_id` arrays
// (after each type's others, as PartitionGraph writes them).
StatusOr<ArrayNames> WriteArrays(Comm& comm, const ChunkedGraph& graph, const Layout& layout,
                                 const Shuffled& shuffled,
                                 const std::vector<std::string>& part_dirs);

// Step 5: orig_nids.npy / orig_eids.npy, written by rank 0 from rows every
// rank sends in bounded pieces.
Status WriteMappings(Comm& comm, const Shuffled& shuffled, int64_t num_nodes, int64_t num_edges,
                     const std::string& out_path);

}  // namespace tessera::dist_partition::internal

#endif  // TESSERA_SRC_DIST_PARTITION_DIST_INTERNAL_H_
