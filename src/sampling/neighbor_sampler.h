// File: src/sampling/neighbor_sampler.h
//
// Local neighbour-sampling kernels: pure functions over a read-only CSC view
// (the in-edges of local node v are positions indptr[v] .. indptr[v+1] of
// `indices` (source) and `eids` (edge id)). For each seed they pick up to
// `fanout` in-edges:
//   * uniform without replacement: min(fanout, degree) distinct edges;
//   * uniform with replacement: exactly fanout draws (none if degree is 0);
//   * weighted (per-edge weights, e.g. an edge array): without replacement by
//     Efraimidis–Spirakis keys (zero-weight edges are never picked), with
//     replacement by inverse-CDF draws;
//   * fanout -1: every in-edge.
// With per-relation fanouts (DGL's sample_etype_neighbors) each relation's
// segment of a row is sampled on its own, as above, with that relation's
// fanout (-1: every edge of it, 0: none).
// Excluded edges (options.exclude) are removed before choosing, so a seed
// still gets min(fanout, degree - excluded) edges (DGL drops them afterwards
// and leaves the fanout short).
// Results are deterministic for a given seed: the random stream of a seed
// node depends only on options.seed and that node's key (its global id when
// the caller gives them), never on the thread count or the seed order; with
// per-relation fanouts, that of (seed node, relation r) on options.seed, the
// key and r (relation 0's stream is the single-fanout stream).
// Thread-safe; runs on options.num_threads threads.
#ifndef TESSERA_SRC_SAMPLING_NEIGHBOR_SAMPLER_H_
#define TESSERA_SRC_SAMPLING_NEIGHBOR_SAMPLER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "src/base/default_init.h"
#include "tessera/base/status.h"

namespace tessera::sampling {

struct CscView {
  std::span<const int64_t> indptr;   // [num_nodes + 1]
  std::span<const int64_t> indices;  // [num_edges]: source of each in-edge.
  std::span<const int64_t> eids;     // [num_edges]: edge id of each in-edge.
  // With `eids` empty, the edge at position p is eid_base + p (a part's
  // inner rows): one random read less per sampled edge.
  int64_t eid_base = 0;
  // Relation of each position; empty: every edge is of relation 0. A row's
  // positions are grouped by relation in increasing relation order (callers
  // guarantee it; values outside [0, num_etypes) are an error).
  std::span<const int32_t> etypes;
  int num_etypes = 1;
  // Every relation segment of a row holds consecutive edge ids (a typed
  // part's inner rows: its edges are ordered by relation, then destination),
  // so position p of the segment [b, e) is edge eid(b) + (p - b): one read
  // of `eids` per segment, not per sampled edge.
  bool consecutive_segment_eids = false;
  int64_t num_nodes() const { return static_cast<int64_t>(indptr.size()) - 1; }
  int64_t eid(int64_t p) const { return eids.empty() ? eid_base + p : eids[p]; }
};

// The weights of one relation's edges: weights[eid - eid_base].
struct RelationWeights {
  std::span<const float> weights;
  int64_t eid_base = 0;
};

struct SampleOptions {
  int64_t fanout = 10;  // -1: all in-edges.
  // Empty: `fanout` over each whole row. Else one fanout per relation
  // (csc.num_etypes entries, each >= -1) and `fanout` is ignored.
  std::span<const int64_t> etype_fanouts;
  bool replace = false;
  std::span<const float> weights;  // Empty: uniform.
  // `weights` is indexed by CSC position (one weight per position), or with
  // weights_by_eid by edge id minus weights_eid_base (one weight per edge of
  // an id range, e.g. a part's owned edges when positions are not ids).
  bool weights_by_eid = false;
  int64_t weights_eid_base = 0;
  // Instead of `weights`: one entry per relation (csc.num_etypes; needs
  // csc.etypes), position p weighing relation_weights[etypes[p]] at its
  // edge id. An edge id outside its relation's weights is an error when it
  // is read (a relation with fanout 0 is never read).
  std::span<const RelationWeights> relation_weights;
  // Edge ids never to pick: sorted and distinct. Needs the eids of every
  // row's relation segment in increasing order (as partitions store them).
  std::span<const int64_t> exclude;
  uint64_t seed = 0;
  int num_threads = 1;
  // A call that would return more edges fails (ResourceExhausted) instead of
  // allocating them: a fanout of 10^12 with replacement is a bad request.
  int64_t max_edges = int64_t{1} << 30;
};

// One sampled in-edge per entry: src -> dst (dst is the seed), edge id eid.
// (UninitVector: the sampler sizes them for what a call can give without a
// zero fill, writes the edges and cuts them.)
struct SampledEdges {
  UninitVector<int64_t> src;  // As stored in `indices`.
  UninitVector<int64_t> dst;  // The seed (as given).
  UninitVector<int64_t> eid;  // From `eids`.
  // Seed i's edges are entries [offsets[i], offsets[i+1]) (empty once
  // results of several calls are merged).
  std::vector<int64_t> offsets;
  size_t size() const { return src.size(); }
};

// Samples in-edges of `seeds` (local node ids of `csc`). `keys[i]` keys the
// random stream of seeds[i] (empty: the seed itself). Errors on a seed out of
// range, weights of the wrong length (or an edge id outside them), negative/NaN
// weights, an unsorted exclude list, etype_fanouts whose size is not
// csc.num_etypes or with an entry below -1, or a relation out of range.
// A segment whose fanout is 0 is never read (its weights are not checked).
// Weights may change during the call (shared memory that others push to):
// a weighted call reads each row once, its count and its choice from the
// same read, unless its bound exceeds max_edges; then a second pass may
// find a count that no longer fits, and the call is sampled again (Aborted
// if that keeps happening).
StatusOr<SampledEdges> SampleNeighbors(const CscView& csc, std::span<const int64_t> seeds,
                                       std::span<const int64_t> keys, const SampleOptions& options);

}  // namespace tessera::sampling

#endif  // TESSERA_SRC_SAMPLING_NEIGHBOR_SAMPLER_H_
