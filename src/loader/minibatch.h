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
//     model reads. Blocks are typed by the book (DGL's to_block of a
//     heterograph: per-type nodes, per-relation edges) unless the spec asks
//     for untyped ones (one type of global ids, whatever the graph).
//   SampleEdgeBatch: link prediction. The batch's edges are the positive
//     pairs; k uniform negatives per edge (src kept, dst drawn from the
//     nodes of the edge relation's destination type); the nodes of both
//     pair graphs, compacted together, are the seeds of the blocks. The
//     batch's own edges (or they and their reverse edges) can be excluded
//     from sampling; the fanout is still filled.
//
// Fanouts on a graph of several relations are per relation, as in DGL: an
// int fanout f samples up to f in-edges of each relation of a seed (DGL's
// sample_etype_neighbors); etype_fanouts give each relation its own.
//
// With out-edge sampling (untyped blocks, or a graph of one node type and
// one relation) a block's messages flow from each seed's out-neighbours to
// the seed (the edge's reverse direction).
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
#include "tessera/base/status.h"

namespace tessera::loader {

struct NeighborSpec {
  std::vector<int64_t> fanouts;  // Per layer, input layer first; -1: all neighbours, 0: none.
  // Instead of `fanouts` (exactly one of them is given): per layer, one
  // fanout per relation of the partition book, in relation-id order (-1:
  // all, 0: none of that relation).
  std::vector<std::vector<int64_t>> etype_fanouts;
  sampling::EdgeDir dir = sampling::EdgeDir::kIn;
  bool replace = false;
  std::string prob;  // float32 edge array of weights; empty: uniform.
  // Blocks typed by the book; false: untyped (one type of global ids; the
  // edges' relations are then found from their ids).
  bool typed = true;
};

struct MiniBatch {
  // Output nodes, global ids, as given: the last block's destinations
  // (type by type on typed blocks, in this order within a type).
  std::vector<int64_t> seeds;
  std::vector<sampling::Block> blocks;  // Input layer first.
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

// `seeds`: distinct global node ids (of any types). `exclude`: sorted
// distinct edge ids never to sample. Out-edge sampling of typed blocks is
// refused unless the graph has one node type and one relation (sample the
// reverse relations).
StatusOr<MiniBatch> SampleBlocks(kvstore::GraphService& store, std::vector<int64_t> seeds,
                                 const NeighborSpec& spec, uint64_t seed,
                                 std::span<const int64_t> exclude = {});

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

// The pairs of one relation of a pair graph: indices into the batch's
// nodes of the relation's source type (src) and destination type (dst),
// i.e. into mini.blocks.back().dst_nodes(type).
struct PairEdges {
  std::vector<int64_t> src, dst;
  // Positive graph: the id of each pair's edge (per relation when typed);
  // negative graph: empty.
  std::vector<int64_t> eids;
};

struct EdgeBatch {
  std::vector<int64_t> eids;  // The positive edges (global ids), in batch order.
  // Per relation (one when untyped): its positive edges in batch order, and
  // `negatives` pairs per positive edge, k in a row, in the same order: the
  // source kept, the destination uniform over the relation's destination
  // type.
  std::vector<PairEdges> positive, negative;
  // The blocks' destinations are every node of both pair graphs, by type,
  // ascending; mini.seeds the same nodes in global ids.
  MiniBatch mini;
};

// Checks an edge spec against the graph (fanouts, negatives, reverse_eids'
// length and range, reverse_etypes' length and each reverse relation's
// endpoint types and edge count); errors name the relations.
Status ValidateEdgeSpec(const EdgeSpec& spec, const PartitionBook& book);

// `eids`: global edge ids (of any relations); `spec` passed
// ValidateEdgeSpec.
StatusOr<EdgeBatch> SampleEdgeBatch(kvstore::GraphService& store, std::span<const int64_t> eids,
                                    const EdgeSpec& spec, uint64_t seed);

// The seed of stream `index` derived from `seed` (batches of an epoch,
// layers of a batch).
uint64_t DeriveSeed(uint64_t seed, uint64_t index);

}  // namespace tessera::loader

#endif  // TESSERA_SRC_LOADER_MINIBATCH_H_
