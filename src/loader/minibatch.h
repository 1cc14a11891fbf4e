// File: src/loader/minibatch.h
//
// Mini-batches for GNN training (DGL's NeighborSampler, NodeCollator and
// EdgeCollator), built on any GraphService (distributed or standalone):
//
//   SampleBlocks: multi-layer neighbour sampling. Starting from the output
//     seeds, each layer samples `fanouts[l]` neighbours of the current
//     frontier (last layer first, as DGL does) and turns the edges into a
//     Block; the block's source nodes are the next frontier. blocks[0] is
//     the input layer; its source nodes are the nodes whose features the
//     model reads.
//   SampleHeteroBlocks: the same on a typed graph, each layer a HeteroBlock
//     (DGL's to_block of a heterograph: per-type nodes, per-relation edges).
//   SampleEdgeBatch: link prediction. The batch's edges are the positive
//     pairs; k uniform negatives per edge (src kept, dst drawn from all
//     nodes of the edge's destination type); the nodes of both pair graphs,
//     compacted together, are the seeds of the blocks. The batch's own edges
//     (or they and their reverse edges) can be excluded from sampling; the
//     fanout is still filled.
//   SampleHeteroEdgeBatch: the same on a typed graph (DGL's EdgeCollator on
//     a heterograph): pair graphs by relation over the batch's nodes by
//     type, HeteroBlocks.
//
// Fanouts on a typed graph (more than one relation) are per relation, as in
// DGL: an int fanout f samples up to f in-edges of each relation of a seed
// (DGL's sample_etype_neighbors); etype_fanouts give each relation its own.
//
// With out-edge sampling a block's messages flow from each seed's
// out-neighbours to the seed (the edge's reverse direction).
//
// Randomness: everything derives from `seed` (layer by layer), so a batch is
// the same whichever thread or process samples it.
#ifndef TESSERA_SRC_LOADER_MINIBATCH_H_
#define TESSERA_SRC_LOADER_MINIBATCH_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "src/kvstore/graph_service.h"
#include "src/sampling/block.h"
#include "src/sampling/hetero_block.h"
#include "tessera/base/status.h"

namespace tessera::loader {

struct NeighborSpec {
  std::vector<int64_t> fanouts;  // Per layer, input layer first; -1: all neighbours.
  // Instead of `fanouts` (exactly one of them is given): per layer, one
  // fanout per relation of the partition book, in relation-id order (-1:
  // all, 0: none of that relation).
  std::vector<std::vector<int64_t>> etype_fanouts;
  sampling::EdgeDir dir = sampling::EdgeDir::kIn;
  bool replace = false;
  std::string prob;  // float32 edge array of weights; empty: uniform.
};

struct MiniBatch {
  std::vector<int64_t> seeds;           // Output nodes (the last block's dst nodes).
  std::vector<sampling::Block> blocks;  // Input layer first.
  std::span<const int64_t> input_nodes() const {
    return blocks.empty() ? std::span<const int64_t>(seeds)
                          : std::span<const int64_t>(blocks.front().src_nodes);
  }
  int64_t num_sampled_edges() const;
};

// Checks fanouts (at least one layer, each -1 or > 0; per-relation ones -1
// or >= 0, one per relation of `book`).
Status ValidateNeighborSpec(const NeighborSpec& spec, const PartitionBook& book);
size_t NumLayers(const NeighborSpec& spec);

// The request of layer `layer` (input layer 0): its fanout, per relation on
// a typed book.
kvstore::SampleRequest LayerRequest(const NeighborSpec& spec, const PartitionBook& book,
                                    size_t layer, uint64_t seed, std::span<const int64_t> exclude);

// `seeds`: distinct node ids. `exclude`: sorted distinct edge ids never to
// sample.
StatusOr<MiniBatch> SampleBlocks(kvstore::GraphService& store, std::vector<int64_t> seeds,
                                 const NeighborSpec& spec, uint64_t seed,
                                 std::span<const int64_t> exclude = {});

// Heterogeneous mini-batch: seeds and blocks typed (HeteroBlock).
struct HeteroMiniBatch {
  std::vector<int64_t> seeds;                 // Output nodes, homogeneous global ids.
  std::vector<sampling::HeteroBlock> blocks;  // Input layer first.
  int64_t num_sampled_edges() const;
};

// `seeds`: distinct homogeneous node ids (of any types). blocks.back()'s
// dst_nodes are the seeds by type, in seed order; each block's dst_nodes
// are the next block's src_nodes. Out-edge sampling is refused (sample the
// reverse relations).
StatusOr<HeteroMiniBatch> SampleHeteroBlocks(kvstore::GraphService& store,
                                             std::vector<int64_t> seeds, const NeighborSpec& spec,
                                             uint64_t seed, std::span<const int64_t> exclude = {});

// What a batch's edges keep out of its blocks (DGL's exclude): nothing, the
// batch's edges, they and their reverse edges by id (reverse_id) or by
// relation (reverse_types).
enum class Exclude { kNone, kSelf, kReverseId, kReverseTypes };

struct EdgeSpec {
  NeighborSpec neighbors;
  int negatives = 0;  // Uniform negatives per positive edge; 0: none.
  Exclude exclude = Exclude::kNone;
  // kReverseId: reverse_eids[e] is the reverse edge of e (one per edge,
  // homogeneous ids).
  std::vector<int64_t> reverse_eids;
  // kReverseTypes (DGL's reverse_etypes): one entry per relation of the
  // book; the reverse of edge i of relation r is edge i (per-relation id) of
  // relation reverse_etypes[r], whose endpoint types are r's swapped and
  // whose edge count is r's. -1: r has no reverse (a batch holding an edge of
  // r is an error naming it).
  std::vector<int> reverse_etypes;
};

// Pairs as indices into EdgeBatch::blocks' seeds (batch.mini.seeds).
struct PairGraph {
  std::vector<int64_t> src, dst;
};

struct EdgeBatch {
  std::vector<int64_t> eids;  // The positive edges, in batch order.
  PairGraph positive;         // positive.src[i] -> positive.dst[i] is edge eids[i].
  PairGraph negative;         // negatives * eids.size() pairs, k per edge in order.
  MiniBatch mini;             // mini.seeds: every node of both pair graphs, sorted.
};

// Checks an edge spec against the graph (fanouts, negatives, reverse_eids'
// length and range, reverse_etypes' length and each reverse relation's
// endpoint types and edge count); errors name the relations.
Status ValidateEdgeSpec(const EdgeSpec& spec, const PartitionBook& book);

// `eids`: homogeneous edge ids; `spec` passed ValidateEdgeSpec.
StatusOr<EdgeBatch> SampleEdgeBatch(kvstore::GraphService& store, std::span<const int64_t> eids,
                                    const EdgeSpec& spec, uint64_t seed);

// Pair graphs of a typed batch: per relation id, pairs as indices into the
// batch's nodes of the relation's source type (src) and destination type
// (dst), i.e. into mini.blocks.back().dst_nodes[type].
struct HeteroPairGraph {
  std::vector<PairGraph> edges;  // One entry per relation of the book.
};

struct HeteroEdgeBatch {
  std::vector<int64_t> eids;  // The positive edges (homogeneous ids), in batch order.
  // Per relation id: the per-relation ids of its positive edges, in batch
  // order; positive.edges[r] pairs them one for one.
  std::vector<std::vector<int64_t>> relation_eids;
  HeteroPairGraph positive;
  // negatives pairs per positive edge of each relation, k in a row, in the
  // order of relation_eids[r]: the source kept, the destination uniform over
  // the relation's destination type.
  HeteroPairGraph negative;
  // mini.blocks.back().dst_nodes[t]: every node of type t of both pair
  // graphs, per-type ids ascending; mini.seeds: the same nodes in
  // homogeneous ids, ascending.
  HeteroMiniBatch mini;
};

// `eids`: homogeneous edge ids of any relations; `spec` passed
// ValidateEdgeSpec and samples in-edges.
StatusOr<HeteroEdgeBatch> SampleHeteroEdgeBatch(kvstore::GraphService& store,
                                                std::span<const int64_t> eids, const EdgeSpec& spec,
                                                uint64_t seed);

// The seed of stream `index` derived from `seed` (batches of an epoch,
// layers of a batch).
uint64_t DeriveSeed(uint64_t seed, uint64_t index);

}  // namespace tessera::loader

#endif  // TESSERA_SRC_LOADER_MINIBATCH_H_
