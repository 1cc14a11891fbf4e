// File: src/sampling/hetero_block.h
//
// HeteroBlock: DGL's to_block for a heterograph, one message-passing layer
// of an R-GCN style mini-batch. Sampled edges arrive in homogeneous global
// ids (what LocalGraph and the distributed sampler return); the partition
// book gives each node its type and per-type id and each edge its relation
// and per-relation id. Per node type t:
//   * dst_nodes[t]: the seeds of type t (per-type ids), in seed order;
//   * src_nodes[t]: dst_nodes[t] first, then every other source of type t
//     in increasing id order (as ToBlock; DGL's to_block orders them by
//     first appearance, which no caller relies on);
//   * homo_src_nodes[t]: the same nodes in homogeneous global ids.
// Per relation r (src type s, dst type d): the edges of r in input order,
// as an index into src_nodes[s], an index into dst_nodes[d], and the edge's
// per-relation id (as DGL's edata[dgl.EID]; PartitionBook::MapToHomoEid
// gives the homogeneous id).
//
// Layers chain like DGL's blocks: the seeds of the next layer inwards are
// NextSeeds() (every source node, type by type), and the block built on
// them has dst_nodes[t] == this block's src_nodes[t]; the first layer's
// src_nodes[t] are the input nodes whose per-type features the model reads.
//
// Edges must end at the seeds (in-edges; for out-edges sample the reverse
// relations). Values; not thread-safe for mutation.
#ifndef TESSERA_SRC_SAMPLING_HETERO_BLOCK_H_
#define TESSERA_SRC_SAMPLING_HETERO_BLOCK_H_

#include <cstdint>
#include <span>
#include <vector>

#include "src/base/default_init.h"
#include "tessera/base/status.h"
#include "tessera/partition/partition_book.h"

namespace tessera::sampling {

// The edges of one relation in a HeteroBlock. (UninitVector: ToHeteroBlock
// sizes them and writes every element once, without a zero fill first.)
struct HeteroBlockEdges {
  UninitVector<int64_t> src;   // Index into src_nodes[src type of the relation].
  UninitVector<int64_t> dst;   // Index into dst_nodes[dst type of the relation].
  UninitVector<int64_t> eids;  // Per-relation edge id.
  int64_t size() const { return static_cast<int64_t>(src.size()); }
};

struct HeteroBlock {
  // One entry per node type (the book's type-id order).
  std::vector<UninitVector<int64_t>> dst_nodes;       // Per-type ids.
  std::vector<UninitVector<int64_t>> src_nodes;       // Per-type ids; dst_nodes[t] first.
  std::vector<UninitVector<int64_t>> homo_src_nodes;  // Global ids of src_nodes[t].
  std::vector<HeteroBlockEdges> edges;                // One entry per relation.

  int num_ntypes() const { return static_cast<int>(dst_nodes.size()); }
  int num_etypes() const { return static_cast<int>(edges.size()); }
  int64_t num_dst(int t) const { return static_cast<int64_t>(dst_nodes[t].size()); }
  int64_t num_src(int t) const { return static_cast<int64_t>(src_nodes[t].size()); }
  int64_t num_edges() const;
  // Every source node in homogeneous global ids, type by type: the seeds of
  // the next layer inwards.
  std::vector<int64_t> NextSeeds() const;
};

// Builds the block of the edges src[i] -> dst[i] (homogeneous global ids,
// edge ids eids[i]) whose destinations are `seeds` (distinct global ids).
// InvalidArgument, naming the edge or node, if lengths differ, an id is out
// of the book's range, a seed repeats, an edge does not end at a seed, or an
// edge's endpoints are not of its relation's node types (which edge is named
// when several are bad is unspecified); also if edges plus seeds reach 2^32.
StatusOr<HeteroBlock> ToHeteroBlock(const PartitionBook& book, std::span<const int64_t> seeds,
                                    std::span<const int64_t> src, std::span<const int64_t> dst,
                                    std::span<const int64_t> eids);

}  // namespace tessera::sampling

#endif  // TESSERA_SRC_SAMPLING_HETERO_BLOCK_H_
