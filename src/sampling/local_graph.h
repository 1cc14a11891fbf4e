// File: src/sampling/local_graph.h
//
// LocalGraph: the structure of one part of a partitioned graph (the arrays of
// docs/partition-format.md, mapped from the part's files or from a machine's
// shared memory) and the graph operations on what that part owns, in global
// ids: neighbour sampling over in-edges or out-edges, degrees, and the
// endpoints of edges. A trainer runs them on its own machine's part in
// process; a server runs them for requests about its part.
//
// The part owns the in-edges of its nodes, stored in their CSC rows ("inner
// rows"), which come first. In the homogeneous layout they are in edge-id
// order, so position p of the inner rows is the edge edge_range.first + p and
// the sampler never reads `eid` for them. In the typed layout (partitions of
// a heterograph, `etype` given) owned edge ids are grouped by relation, then
// destination, while rows are grouped by destination: positions are not ids,
// `eid` is read, and FindEdges uses an edge id -> position index built on
// first use (8 bytes per owned edge). Rows are sorted by edge id, hence by
// relation, which per-relation fanouts sample one segment at a time.
// Out-edges of owned nodes are found through the HALO rows (partitions made
// with num_hops >= 1 store every out-edge of their nodes); the out-edge index
// is built on first use (about 16 bytes per local edge, 20 typed; typed rows
// grouped by relation).
//
// Immutable after creation; thread-safe.
#ifndef TESSERA_SRC_SAMPLING_LOCAL_GRAPH_H_
#define TESSERA_SRC_SAMPLING_LOCAL_GRAPH_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "src/sampling/neighbor_sampler.h"
#include "tessera/base/status.h"
#include "tessera/partition/load_partition.h"

namespace tessera::sampling {

enum class EdgeDir { kIn, kOut };

// The arrays of one part (spans into memory that `keepalive` keeps mapped).
struct PartArrays {
  int part_id = 0;
  int halo_hops = 1;
  std::pair<int64_t, int64_t> node_range;  // Owned global node ids [begin, end).
  std::pair<int64_t, int64_t> edge_range;  // Owned global edge ids.
  std::span<const int64_t> nid;            // Local node -> global id; owned nodes first.
  std::span<const int64_t> indptr;         // CSC over local nodes.
  std::span<const int64_t> indices;        // Local source of each stored edge.
  std::span<const int64_t> eid;            // Global id of each stored edge.
  // Typed layout: the relation of each stored edge (etype.npy), in
  // [0, num_etypes). Empty for the homogeneous layout (one relation).
  std::span<const int32_t> etype;
  int num_etypes = 1;
  std::shared_ptr<const void> keepalive;
};

// The arrays of a loaded part (which the result keeps alive).
PartArrays PartArraysOf(std::shared_ptr<const LocalPartition> part);

struct NeighborOptions {
  int64_t fanout = -1;  // -1: every edge.
  // Per-relation fanouts (DGL's sample_etype_neighbors): empty: `fanout` over
  // all of a seed's edges; else one entry per relation (num_etypes), -1:
  // every edge of that relation, 0: none, k: k edges of it (fewer without
  // replacement when the seed has fewer), each relation sampled on its own.
  std::vector<int64_t> etype_fanouts;
  EdgeDir dir = EdgeDir::kIn;
  bool replace = false;
  // One weight per owned edge, in edge-id order (weights[e - edge_range.first];
  // in the typed layout the part's rows of each relation's edge array, in
  // relation order); empty: uniform. In-edges only: out-edges' weights live
  // with other parts.
  std::span<const float> weights;
  // Typed layout, instead of `weights`: one entry per relation, the weights
  // of the part's edges of that relation (eid_base: the global id of its
  // first owned edge); a relation with fanout 0 may have none. In-edges only.
  std::span<const RelationWeights> relation_weights;
  std::span<const int64_t> exclude;  // Global edge ids never to pick; sorted, distinct.
  uint64_t seed = 0;
  int num_threads = 1;
  int64_t max_edges = int64_t{1} << 30;  // More is ResourceExhausted (SampleOptions).
};

class LocalGraph {
 public:
  // Checks the arrays against each other and the ranges (cheaply: sizes,
  // bounds, the first, last and a few other owned ids; in the typed layout
  // every relation, and that each inner row's edge ids increase and are
  // owned); a mismatch is DataLoss naming the part.
  static StatusOr<std::shared_ptr<const LocalGraph>> Create(PartArrays arrays);

  int part_id() const { return a_.part_id; }
  std::pair<int64_t, int64_t> node_range() const { return a_.node_range; }
  std::pair<int64_t, int64_t> edge_range() const { return a_.edge_range; }
  int64_t num_owned_nodes() const { return a_.node_range.second - a_.node_range.first; }
  int64_t num_owned_edges() const { return a_.edge_range.second - a_.edge_range.first; }
  int num_etypes() const { return a_.num_etypes; }
  bool typed() const { return !a_.etype.empty(); }

  // Samples edges of `seeds` (global ids owned by this part): in-edges
  // (dst = seed) or out-edges (src = seed). Ids in the result are global.
  // The random stream of a seed depends on options.seed and its global id
  // only, with per-relation fanouts that of (seed, relation) on options.seed,
  // its global id and the relation (not on the partitioning of the work or
  // the thread count). A seed's edges come relation by relation with
  // per-relation fanouts. InvalidArgument if etype_fanouts does not have
  // num_etypes() entries or one is below -1.
  StatusOr<SampledEdges> SampleNeighbors(std::span<const int64_t> seeds,
                                         const NeighborOptions& options) const;
  // Endpoints of owned edges.
  Status FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) const;
  // Degrees of owned nodes.
  Status InDegrees(std::span<const int64_t> nids, int64_t* out) const;
  Status OutDegrees(std::span<const int64_t> nids, int64_t* out) const;
  // Degrees counting only the edges of relation `etype` (-1: every relation;
  // on the homogeneous layout the one relation is 0). InvalidArgument for
  // another relation id.
  Status Degrees(std::span<const int64_t> nids, EdgeDir dir, int etype, int64_t* out) const;

 private:
  explicit LocalGraph(PartArrays arrays) : a_(std::move(arrays)) {}
  int64_t num_owned_positions() const { return a_.indptr[num_owned_nodes()]; }
  // Global id of a local node: owned nodes by arithmetic (no random read of
  // `nid`), HALO nodes through `nid`.
  int64_t GlobalId(int64_t local) const {
    return local < num_owned_nodes() ? a_.node_range.first + local : a_.nid[local];
  }
  Status CheckOwnedNodes(std::span<const int64_t> nids) const;
  // The out-edges of owned nodes: rows over owned nodes, local destination
  // and global edge id per entry (and relation, typed), ordered by edge id
  // (typed: by relation, then edge id) within a row.
  struct OutIndex {
    std::vector<int64_t> indptr, dst, eid;
    std::vector<int32_t> etype;  // Typed layout only.
  };
  StatusOr<const OutIndex*> Out() const;
  // Typed layout: the inner position of each owned edge, [eid - first].
  StatusOr<const std::vector<int64_t>*> Positions() const;

  PartArrays a_;
  // Typed layout: each relation segment of an inner row holds consecutive
  // edge ids (true of every partition tessera writes; checked by Create).
  bool consecutive_segment_eids_ = false;
  mutable std::once_flag out_once_;
  mutable std::unique_ptr<OutIndex> out_;
  mutable std::once_flag positions_once_;
  mutable std::vector<int64_t> positions_;
  mutable Status positions_status_;
};

}  // namespace tessera::sampling

#endif  // TESSERA_SRC_SAMPLING_LOCAL_GRAPH_H_
