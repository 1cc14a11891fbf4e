// File: src/sampling/block.h
//
// Block (DGL's "block", an MFG): one message-passing layer of a mini-batch,
// typed. A graph with one node type and one relation is the case of one
// type: there is no second, homogeneous form.
//
// Per node type t:
//   * src_nodes[t]: the sources of type t; the first num_dst(t) of them are
//     the destinations (the layer's seeds of type t, in seed order), then
//     every other source of type t in increasing id order. Ids are per-type
//     ids on a typed block (ToBlock with a book), global ids otherwise.
//   * homo_src_nodes[t]: the global ids of src_nodes[t] on a typed block;
//     empty on an untyped one, where src_nodes already are global ids
//     (global_src_nodes(t) is either).
// Per relation r (source type s, destination type d): its edges as a CSR
// over the destinations of type d: indptr (num_dst(d) + 1), the index of
// each edge's source in src_nodes[s], and the edge's id (per-relation ids
// on a typed block, as DGL's edata[dgl.EID]; global ids otherwise). Edges
// keep their input order within a destination.
//
// Layers chain like DGL's blocks: the seeds of the next layer inwards are
// NextSeeds() (every source, type by type, in global ids), and the block
// built on them has those destinations; the first layer's sources are the
// nodes whose features the model reads.
//
// Values; not thread-safe for mutation.
#ifndef TESSERA_SRC_SAMPLING_BLOCK_H_
#define TESSERA_SRC_SAMPLING_BLOCK_H_

#include <cstdint>
#include <span>
#include <vector>

#include "src/base/default_init.h"
#include "tessera/base/status.h"
#include "tessera/partition/partition_book.h"

namespace tessera::sampling {

// The edges of one relation. (UninitVector: ToBlock sizes them and writes
// every element once, without a zero fill first.)
struct BlockEdges {
  int src_type = 0, dst_type = 0;
  UninitVector<int64_t> indptr;   // [num_dst(dst_type) + 1]
  UninitVector<int64_t> indices;  // Index into src_nodes[src_type].
  UninitVector<int64_t> eids;     // Edge ids (per relation on a typed block).
  int64_t size() const { return static_cast<int64_t>(indices.size()); }
};

struct Block {
  std::vector<UninitVector<int64_t>> src_nodes;       // Per type; destinations first.
  std::vector<int64_t> num_dst_nodes;                 // Per type.
  std::vector<UninitVector<int64_t>> homo_src_nodes;  // Per type on a typed block; else empty.
  std::vector<BlockEdges> edges;                      // Per relation.

  bool typed() const { return !homo_src_nodes.empty(); }
  int num_ntypes() const { return static_cast<int>(src_nodes.size()); }
  int num_etypes() const { return static_cast<int>(edges.size()); }
  int64_t num_dst(int t = 0) const { return num_dst_nodes[t]; }
  int64_t num_src(int t = 0) const { return static_cast<int64_t>(src_nodes[t].size()); }
  int64_t num_edges() const;  // All relations.
  std::span<const int64_t> dst_nodes(int t = 0) const {
    return {src_nodes[t].data(), static_cast<size_t>(num_dst_nodes[t])};
  }
  std::span<const int64_t> global_src_nodes(int t = 0) const {
    return typed() ? homo_src_nodes[t] : src_nodes[t];
  }
  // Every source in global ids, type by type: the seeds of the next layer
  // inwards.
  std::vector<int64_t> NextSeeds() const;
};

// Untyped: the block of the edges src[i] -> dst[i] (global ids, edge ids
// eids[i]) whose destinations are `seeds` (distinct global ids); one type,
// one relation. InvalidArgument if lengths differ, an id is negative, an
// edge does not end at a seed, or a seed repeats.
StatusOr<Block> ToBlock(std::span<const int64_t> seeds, std::span<const int64_t> src,
                        std::span<const int64_t> dst, std::span<const int64_t> eids);

// Typed by `book`: nodes by type, edges by relation, per-type and
// per-relation ids. On a book of one type and one relation, the untyped
// block (whose ids are then the per-type ones). InvalidArgument, naming
// the edge or node, if lengths differ, an id is out of the book's range, a
// seed repeats, an edge does not end at a seed, or an edge's endpoints are
// not of its relation's node types (which edge is named when several are
// bad is unspecified); also if edges plus seeds reach 2^32.
StatusOr<Block> ToBlock(const PartitionBook& book, std::span<const int64_t> seeds,
                        std::span<const int64_t> src, std::span<const int64_t> dst,
                        std::span<const int64_t> eids);

}  // namespace tessera::sampling

#endif  // TESSERA_SRC_SAMPLING_BLOCK_H_
