// File: src/sampling/block.h
//
// Block (DGL's "block", an MFG): one message-passing layer of a mini-batch.
// Its destination nodes are the layer's seeds; its source nodes are the
// destination nodes first (same order), then every other sampled source in
// increasing global id. Edges are stored as a CSR over destinations, with
// compact (block-local) source indices and the original edge ids.
#ifndef TESSERA_SRC_SAMPLING_BLOCK_H_
#define TESSERA_SRC_SAMPLING_BLOCK_H_

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::sampling {

struct Block {
  std::vector<int64_t> src_nodes;  // Global ids; the first num_dst() are the dst nodes.
  std::vector<int64_t> indptr;     // [num_dst + 1]
  std::vector<int64_t> indices;    // Block-local source index of each edge.
  std::vector<int64_t> eids;       // Original edge id of each edge.

  int64_t num_dst() const { return static_cast<int64_t>(indptr.size()) - 1; }
  int64_t num_src() const { return static_cast<int64_t>(src_nodes.size()); }
  int64_t num_edges() const { return static_cast<int64_t>(indices.size()); }
  std::span<const int64_t> dst_nodes() const {
    return {src_nodes.data(), static_cast<size_t>(num_dst())};
  }
};

// Builds the block of the edges src[i] -> dst[i] (global ids, edge ids
// eids[i]) whose destinations are `seeds` (distinct global ids). Errors if an
// edge's destination is not a seed, or seeds repeat.
StatusOr<Block> ToBlock(std::span<const int64_t> seeds, std::span<const int64_t> src,
                        std::span<const int64_t> dst, std::span<const int64_t> eids);

}  // namespace tessera::sampling

#endif  // TESSERA_SRC_SAMPLING_BLOCK_H_
