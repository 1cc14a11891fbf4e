// File: src/sampling/typed_block.cc
//
// ToBlock typed by a partition book. Like the untyped one, without hash maps: seeds and sources are
// sorted as packed (id, index) keys with the radix sort and merged. Types and per-type ids come
// from a flat index of the book's (part, type) blocks, looked up only where the block changes:
// sampled edges arrive in runs of one relation (found once, in the first pass, and reused by the
// last), and sorted sources in runs of one node type.
#include <algorithm>

#include "fmt/format.h"
#include "src/sampling/block.h"
#include "src/sampling/radix_sort.h"

namespace tessera::sampling {
namespace {

using internal::BitsFor;
using internal::RadixSort;

// Homogeneous id -> (type, per-type id) over the non-empty blocks of one type
// inside one part, which tile [0, total) in id order (partition-major, then
// type; PartitionBook checks that). Ids are looked up in a table of id
// buckets, each naming its range when it lies inside one; the few buckets
// that straddle two ranges fall back to a binary search.
class TypeIndex {
 public:
  struct Range {
    int64_t start = 0, end = 0;
    int64_t base = 0;  // Per-type id of `start`.
    int type = 0;
  };

  static TypeIndex Nodes(const PartitionBook& book) {
    TypeIndex index;
    for (int p = 0; p < book.num_partitions(); ++p) {
      for (int t = 0; t < book.num_ntypes(); ++t) {
        auto [start, end] = book.NodeTypeRange(t, p);
        index.Add(start, end, book.TypedNodeOffsets(t)[p], t);
      }
    }
    index.BuildBuckets();
    return index;
  }
  static TypeIndex Edges(const PartitionBook& book) {
    TypeIndex index;
    for (int p = 0; p < book.num_partitions(); ++p) {
      for (int r = 0; r < book.num_etypes(); ++r) {
        auto [start, end] = book.EdgeTypeRange(r, p);
        index.Add(start, end, book.TypedEdgeOffsets(r)[p], r);
      }
    }
    index.BuildBuckets();
    return index;
  }

  // The index of the range holding `id`. Precondition: 0 <= id < total.
  uint32_t Locate(int64_t id) const {
    const uint32_t slot = buckets_[static_cast<uint64_t>(id) >> shift_];
    return slot != kMixed ? slot : Search(id);
  }
  const Range& range(uint32_t i) const { return ranges_[i]; }
  const Range& Find(int64_t id) const { return ranges_[Locate(id)]; }

 private:
  static constexpr uint32_t kMixed = UINT32_MAX;
  static constexpr int kMinBucketBits = 10;

  TypeIndex() = default;
  void Add(int64_t start, int64_t end, int64_t base, int type) {
    if (start < end) ranges_.push_back({start, end, base, type});
  }
  // About 16 buckets per range, at least 2^10 and at most 2^16 of them.
  void BuildBuckets() {
    if (ranges_.empty()) return;
    const int64_t total = ranges_.back().end;
    const int want = std::clamp(BitsFor(16 * ranges_.size()), kMinBucketBits, 16);
    shift_ = std::max(0, BitsFor(static_cast<uint64_t>(total - 1)) - want);
    const int64_t width = int64_t{1} << shift_;
    const int64_t count = ((total - 1) >> shift_) + 1;
    buckets_.assign(static_cast<size_t>(count), kMixed);
    for (size_t i = 0; i < ranges_.size(); ++i) {
      // Buckets wholly inside the range (the last bucket ends at total).
      const int64_t first = (ranges_[i].start + width - 1) >> shift_;
      const int64_t last = ranges_[i].end == total ? count : ranges_[i].end >> shift_;
      for (int64_t b = first; b < last; ++b) buckets_[b] = static_cast<uint32_t>(i);
    }
  }
  // A branch-free binary search (which range an id falls in is
  // unpredictable).
  uint32_t Search(int64_t id) const {
    const Range* base = ranges_.data();
    for (size_t n = ranges_.size(); n > 1;) {
      const size_t half = n / 2;
      base = base[half].start <= id ? base + half : base;
      n -= half;
    }
    return static_cast<uint32_t>(base - ranges_.data());
  }

  std::vector<Range> ranges_;
  std::vector<uint32_t> buckets_;
  int shift_ = 0;
};

// A run of edges in one range of the edge index (one relation inside one
// part): edges [begin, the next run's begin). (No member initializers: an
// UninitVector of them is sized for every edge and left unwritten.)
struct Run {
  size_t begin;
  uint32_t range;
};

// The phases of the typed ToBlock are functions of their own: one function
// holding every phase's state spilled its loop counters to the stack.

// Pass over the edges: checks sources and edge ids, finds the runs, and
// packs each edge's source key (id << low_bits) | (relation << edge_bits) |
// edge index. A run is recorded without a branch (its slot is written for
// every edge, and kept when the range changes).
Status ScanEdges(const TypeIndex& edge_index, std::span<const int64_t> src,
                 std::span<const int64_t> eids, int64_t num_nodes, int64_t num_edges, int edge_bits,
                 int low_bits, UninitVector<uint64_t>& keys, UninitVector<Run>& runs) {
  const size_t n_edges = src.size();
  const auto nodes_u = static_cast<uint64_t>(num_nodes);
  const auto edges_u = static_cast<uint64_t>(num_edges);
  keys.resize(n_edges);
  runs.resize(n_edges);
  size_t num_runs = 0;
  uint32_t previous = UINT32_MAX;
  for (size_t e = 0; e < n_edges; ++e) {
    const int64_t s = src[e], id = eids[e];
    if (static_cast<uint64_t>(s) >= nodes_u) {
      return absl::InvalidArgumentError(
          fmt::format("to_block: the source of edge {} is node {}, outside the graph's {} nodes", e,
                      s, num_nodes));
    }
    // (Destinations are checked where they are matched to seeds.)
    if (static_cast<uint64_t>(id) >= edges_u) {
      return absl::InvalidArgumentError(fmt::format(
          "to_block: edge {} has id {}, outside the graph's {} edges", e, id, num_edges));
    }
    const uint32_t range = edge_index.Locate(id);
    runs[num_runs] = {e, range};
    num_runs += range != previous;
    previous = range;
    keys[e] = (static_cast<uint64_t>(s) << low_bits) |
              (static_cast<uint64_t>(edge_index.range(range).type) << edge_bits) | e;
  }
  runs.resize(num_runs);
  return absl::OkStatus();
}

// What MergeSources needs of the seeds: sorted keys (id << seed_bits) | i,
// and each seed's type and index among its type's destinations.
struct SortedSeeds {
  std::span<const uint64_t> keys;
  int seed_bits = 0;
  std::span<const int> type;
  std::span<const int64_t> index;
};

// Sources sorted by id, merged with the sorted seeds: a seed keeps its
// destination index, every other node is appended to its type's sources
// (src_out / homo_out, num_src[t] so far), so in increasing id order (as
// ToBlock). Each edge gets its source's index within the type (32 bits:
// the scatter is random, and half the bytes keep a batch's indices in
// cache) once the source's type is checked against the edge's relation; a
// node is appended only after that check passes for one of its edges, so a
// type's sources never outnumber the edges of the relations starting at it.
// Returns the index of the first edge whose source has the wrong type (and
// that type in *bad_type), or -1.
[[gnu::noinline]] int64_t MergeSources(std::span<const uint64_t> keys, int edge_bits, int low_bits,
                                       const SortedSeeds& seeds, const TypeIndex& node_index,
                                       std::span<const int> src_type,
                                       std::span<int64_t* const> src_out,
                                       std::span<int64_t* const> homo_out,
                                       std::span<int64_t> num_src, uint32_t* src_index,
                                       int* bad_type) {
  const size_t n_dst = seeds.keys.size();
  const uint64_t edge_mask = (uint64_t{1} << edge_bits) - 1;
  const uint64_t relation_mask = (uint64_t{1} << (low_bits - edge_bits)) - 1;
  const uint64_t position_mask = (uint64_t{1} << seeds.seed_bits) - 1;
  // The next seed at or after the current source, as an id (INT64_MAX past
  // the last).
  size_t k = 0;
  auto seed_at = [&] {
    return k < n_dst ? static_cast<int64_t>(seeds.keys[k] >> seeds.seed_bits) : INT64_MAX;
  };
  int64_t next_seed = seed_at();
  int64_t current = -1;
  uint32_t index = 0;
  int type = 0;
  bool placed = true;  // Whether `current` is a seed or already appended.
  // The node range of the last source that is not a seed.
  int64_t node_start = 0, node_end = 0, node_offset = 0;
  int node_type = 0;
  for (const uint64_t key : keys) {
    const int64_t id = static_cast<int64_t>(key >> low_bits);
    if (id != current) {
      current = id;
      while (next_seed < id) {
        ++k;
        next_seed = seed_at();
      }
      if (next_seed == id) {
        const size_t i = seeds.keys[k] & position_mask;
        index = static_cast<uint32_t>(seeds.index[i]);
        type = seeds.type[i];
        placed = true;
      } else {
        if (id < node_start || id >= node_end) {
          const TypeIndex::Range& range = node_index.Find(id);
          node_start = range.start;
          node_end = range.end;
          node_offset = range.base - range.start;
          node_type = range.type;
        }
        type = node_type;
        placed = false;
      }
    }
    const size_t e = key & edge_mask;
    if (src_type[(key >> edge_bits) & relation_mask] != type) {
      *bad_type = type;
      return static_cast<int64_t>(e);
    }
    if (!placed) {
      const int64_t at = num_src[type]++;
      src_out[type][at] = id + node_offset;
      homo_out[type][at] = id;
      index = static_cast<uint32_t>(at);
      placed = true;
    }
    src_index[e] = index;
  }
  return -1;
}

// Where each relation's edges go next (`dst` only when kept), its
// destination counts (the CSR's indptr, shifted by one) and whether its edges
// so far are grouped by destination in order.
struct EdgeCursor {
  int64_t *src, *dst, *eid;
  int64_t* count;
  int64_t last = 0;
  bool in_order = true;
};
// (A run is often a single destination's edges, so FillRelations keeps the
// cursor's pointers in locals and stores them back one by one: copying the
// struct in and out per run stalled on store forwarding.)

// The first edge FillRelations refused, if any.
struct EdgeFault {
  enum Kind { kNone, kOutside, kNotASeed, kWrongType } kind = kNone;
  size_t edge = 0;
  int relation = 0;
  int actual = 0;  // kWrongType: the type of the edge's destination.
};

// Each run's edges into its relation (through `cursors`), with their
// destinations' indices: edges come grouped by destination, mostly in seed
// order, so the next seed is tried first, then a binary search. Each edge's
// destination index is written out only with kKeepDst, which FinishCsr needs
// for a relation whose edges are out of destination order (rare: a first
// pass without it tells).
template <bool kKeepDst>
[[gnu::noinline]] EdgeFault FillRelations(std::span<const int64_t> seeds,
                                          std::span<const int64_t> dst,
                                          std::span<const int64_t> eids,
                                          std::span<const uint32_t> src_index,
                                          std::span<const Run> runs, const TypeIndex& edge_index,
                                          const SortedSeeds& sorted, std::span<const int> dst_type,
                                          int64_t num_nodes, std::span<EdgeCursor> cursors) {
  const size_t n_edges = dst.size();
  const auto n_dst = static_cast<int64_t>(seeds.size());
  const uint64_t position_mask = (uint64_t{1} << sorted.seed_bits) - 1;
  // The current destination; the first edge always looks its seed up (any
  // id may come first, -1 too).
  int64_t last_dst = 0, last_seed = -1, dst_at = 0;
  int seed_t = -1;
  bool first = true;
  for (size_t i = 0; i < runs.size(); ++i) {
    const size_t begin = runs[i].begin;
    const size_t end = i + 1 < runs.size() ? runs[i + 1].begin : n_edges;
    const TypeIndex::Range& range = edge_index.range(runs[i].range);
    const int relation = range.type;
    const int64_t id_offset = range.base - range.start;
    const int want_dst_type = dst_type[relation];
    EdgeCursor& at = cursors[relation];
    int64_t *out_src = at.src, *out_dst = at.dst, *out_eid = at.eid;
    // The relation's edges [segment, e) all end at dst_at: counted when the
    // destination changes or the run ends, not edge by edge.
    size_t segment = begin;
    auto count_segment = [&](size_t e) {
      at.count[dst_at + 1] += static_cast<int64_t>(e - segment);
      if (dst_at < at.last) at.in_order = false;
      at.last = dst_at;
    };
    for (size_t e = begin; e < end; ++e) {
      const int64_t d = dst[e];
      if (d != last_dst || first) {
        if (e > segment) count_segment(e);
        segment = e;
        first = false;
        if (last_seed + 1 < n_dst && seeds[last_seed + 1] == d) {
          ++last_seed;
        } else {
          if (d < 0 || d >= num_nodes) return {EdgeFault::kOutside, e};
          const uint64_t probe = static_cast<uint64_t>(d) << sorted.seed_bits;
          auto it = std::lower_bound(sorted.keys.begin(), sorted.keys.end(), probe);
          if (it == sorted.keys.end() || static_cast<int64_t>(*it >> sorted.seed_bits) != d) {
            return {EdgeFault::kNotASeed, e};
          }
          last_seed = static_cast<int64_t>(*it & position_mask);
        }
        last_dst = d;
        seed_t = sorted.type[last_seed];
        dst_at = sorted.index[last_seed];
      }
      if (seed_t != want_dst_type) return {EdgeFault::kWrongType, e, relation, seed_t};
      *out_src++ = src_index[e];
      if constexpr (kKeepDst) *out_dst++ = dst_at;
      *out_eid++ = eids[e] + id_offset;
    }
    if (end > segment) count_segment(end);
    at.src = out_src;
    at.dst = out_dst;
    at.eid = out_eid;
  }
  return {};
}

// A relation's CSR from the counts FillRelations made: their prefix sums,
// and a stable scatter of the edges (by their destinations `dst`) only if
// they were not grouped by destination in order (sampled edges almost
// always are).
void FinishCsr(std::span<const int64_t> dst, bool in_order, BlockEdges& out) {
  const size_t num_dst = out.indptr.size() - 1;
  for (size_t d = 0; d < num_dst; ++d) out.indptr[d + 1] += out.indptr[d];
  if (in_order) return;
  UninitVector<int64_t> indices(dst.size()), eids(dst.size());
  UninitVector<int64_t> fill(out.indptr.begin(), out.indptr.end() - 1);
  for (size_t e = 0; e < dst.size(); ++e) {
    const int64_t slot = fill[dst[e]]++;
    indices[slot] = out.indices[e];
    eids[slot] = out.eids[e];
  }
  out.indices = std::move(indices);
  out.eids = std::move(eids);
}

// The untyped block of a one-type, one-relation book, whose global ids are
// its per-type ids, after the typed path's range checks (and messages).
StatusOr<Block> OneTypeBlock(const PartitionBook& book, std::span<const int64_t> seeds,
                             std::span<const int64_t> src, std::span<const int64_t> dst,
                             std::span<const int64_t> eids) {
  const auto nodes = static_cast<uint64_t>(book.num_nodes());
  const auto edges = static_cast<uint64_t>(book.num_edges());
  auto outside = [&](const char* what, size_t i, int64_t v) {
    return absl::InvalidArgumentError(
        fmt::format("to_block: {} {} is node {}, outside the graph's {} nodes", what, i, v, nodes));
  };
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (static_cast<uint64_t>(seeds[i]) >= nodes) return outside("seed", i, seeds[i]);
  }
  for (size_t e = 0; e < src.size() && e < dst.size() && e < eids.size(); ++e) {
    if (static_cast<uint64_t>(src[e]) >= nodes) return outside("the source of edge", e, src[e]);
    if (static_cast<uint64_t>(dst[e]) >= nodes) {
      return outside("the destination of edge", e, dst[e]);
    }
    if (static_cast<uint64_t>(eids[e]) >= edges) {
      return absl::InvalidArgumentError(fmt::format(
          "to_block: edge {} has id {}, outside the graph's {} edges", e, eids[e], edges));
    }
  }
  return ToBlock(seeds, src, dst, eids);
}

}  // namespace

StatusOr<Block> ToBlock(const PartitionBook& book, std::span<const int64_t> seeds,
                        std::span<const int64_t> src, std::span<const int64_t> dst,
                        std::span<const int64_t> eids) {
  if (src.size() != dst.size() || src.size() != eids.size()) {
    return absl::InvalidArgumentError(
        fmt::format("to_block: src, dst and eids differ in length ({}, {}, {})", src.size(),
                    dst.size(), eids.size()));
  }
  const int num_ntypes = book.num_ntypes(), num_etypes = book.num_etypes();
  if (num_ntypes == 1 && num_etypes == 1) return OneTypeBlock(book, seeds, src, dst, eids);
  const int64_t num_nodes = book.num_nodes();
  // Endpoint types of each relation.
  std::vector<int> src_type(num_etypes), dst_type(num_etypes);
  for (int r = 0; r < num_etypes; ++r) {
    ASSIGN_OR_RETURN(src_type[r], book.NodeTypeId(book.etypes()[r].src_type));
    ASSIGN_OR_RETURN(dst_type[r], book.NodeTypeId(book.etypes()[r].dst_type));
  }
  auto node_error = [&](const char* what, size_t i, int64_t v) {
    return absl::InvalidArgumentError(fmt::format(
        "to_block: {} {} is node {}, outside the graph's {} nodes", what, i, v, num_nodes));
  };
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (seeds[i] < 0 || seeds[i] >= num_nodes) return node_error("seed", i, seeds[i]);
  }
  const size_t n_dst = seeds.size(), n_edges = src.size();
  if (n_edges + n_dst > UINT32_MAX) {
    return absl::InvalidArgumentError(
        fmt::format("to_block: {} edges and {} seeds are too many for one block", n_edges, n_dst));
  }
  const int id_bits = std::max(1, BitsFor(static_cast<uint64_t>(num_nodes)));
  // Source keys carry the edge's relation, so the merge checks each edge's
  // source type where it meets the source.
  const int seed_bits = BitsFor(n_dst), edge_bits = BitsFor(n_edges);
  const int low_bits = edge_bits + BitsFor(static_cast<uint64_t>(std::max(0, num_etypes - 1)));
  if (id_bits + std::max(seed_bits, low_bits) > 64) {
    return absl::InvalidArgumentError(
        fmt::format("to_block: {} edges over {} nodes exceed its 64-bit keys", n_edges, num_nodes));
  }
  TypeIndex node_index = TypeIndex::Nodes(book);
  const TypeIndex edge_index = TypeIndex::Edges(book);
  UninitVector<uint64_t> sorted_src, tmp;
  UninitVector<Run> runs;
  RETURN_IF_ERROR(ScanEdges(edge_index, src, eids, num_nodes, book.num_edges(), edge_bits, low_bits,
                            sorted_src, runs));
  std::vector<int64_t> per_relation(num_etypes, 0);
  for (size_t i = 0; i < runs.size(); ++i) {
    const size_t end = i + 1 < runs.size() ? runs[i + 1].begin : n_edges;
    per_relation[edge_index.range(runs[i].range).type] += static_cast<int64_t>(end - runs[i].begin);
  }
  // Destination nodes: each seed's type, its index among its type's seeds
  // and its per-type id, then the arrays at their final sizes.
  std::vector<int> seed_type(n_dst);
  std::vector<int64_t> seed_index(n_dst);
  UninitVector<int64_t> seed_local(n_dst);
  UninitVector<uint64_t> sorted_seeds(n_dst);
  std::vector<int64_t> num_dst(num_ntypes, 0);
  for (size_t i = 0; i < n_dst; ++i) {
    const TypeIndex::Range& range = node_index.Find(seeds[i]);
    seed_type[i] = range.type;
    seed_index[i] = num_dst[range.type]++;
    seed_local[i] = seeds[i] - range.start + range.base;
    sorted_seeds[i] = (static_cast<uint64_t>(seeds[i]) << seed_bits) | i;
  }
  Block block;
  block.num_dst_nodes = num_dst;
  block.src_nodes.resize(num_ntypes);
  block.homo_src_nodes.resize(num_ntypes);
  block.edges.resize(num_etypes);
  // A type's sources are its seeds, then at most one per edge of the
  // relations starting at it (see MergeSources); cut at the end.
  std::vector<int64_t> room(num_ntypes, 0);
  for (int r = 0; r < num_etypes; ++r) room[src_type[r]] += per_relation[r];
  std::vector<int64_t*> src_out(num_ntypes), homo_out(num_ntypes);
  for (int t = 0; t < num_ntypes; ++t) {
    block.src_nodes[t].resize(num_dst[t] + room[t]);
    block.homo_src_nodes[t].resize(num_dst[t] + room[t]);
    src_out[t] = block.src_nodes[t].data();
    homo_out[t] = block.homo_src_nodes[t].data();
  }
  for (size_t i = 0; i < n_dst; ++i) {
    const int t = seed_type[i];
    const int64_t at = seed_index[i];
    src_out[t][at] = seed_local[i];
    homo_out[t][at] = seeds[i];
  }
  RadixSort(sorted_seeds, seed_bits, seed_bits + id_bits, tmp);
  for (size_t k = 1; k < n_dst; ++k) {
    if ((sorted_seeds[k] >> seed_bits) == (sorted_seeds[k - 1] >> seed_bits)) {
      return absl::InvalidArgumentError(
          fmt::format("to_block: seed {} appears twice", sorted_seeds[k] >> seed_bits));
    }
  }
  auto type_error = [&](size_t e, int r, bool at_src, int actual) {
    const EdgeType& et = book.etypes()[r];
    return absl::InvalidArgumentError(fmt::format(
        "to_block: edge {} ({} -> {}, id {}) of relation '{}' does not {} a node of type '{}' "
        "(node {} is a '{}')",
        e, src[e], dst[e], eids[e], et.Canonical(), at_src ? "start at" : "end at",
        at_src ? et.src_type : et.dst_type, at_src ? src[e] : dst[e], book.ntypes()[actual]));
  };
  auto relation_of = [&](size_t e) {
    auto run = std::upper_bound(runs.begin(), runs.end(), e,
                                [](size_t v, const Run& r) { return v < r.begin; });
    return edge_index.range(std::prev(run)->range).type;
  };
  RadixSort(sorted_src, low_bits, low_bits + id_bits, tmp);
  UninitVector<uint32_t> src_index(n_edges);
  std::vector<int64_t> num_src = num_dst;
  int bad_type = 0;
  const int64_t bad = MergeSources(
      sorted_src, edge_bits, low_bits, {sorted_seeds, seed_bits, seed_type, seed_index}, node_index,
      src_type, src_out, homo_out, num_src, src_index.data(), &bad_type);
  if (bad >= 0) return type_error(bad, relation_of(bad), true, bad_type);
  for (int t = 0; t < num_ntypes; ++t) {
    block.src_nodes[t].resize(num_src[t]);
    block.homo_src_nodes[t].resize(num_src[t]);
  }
  // Edges by relation, first without their destination indices; again with
  // them if a relation's edges are out of destination order.
  std::vector<UninitVector<int64_t>> edge_dst(num_etypes);
  std::vector<EdgeCursor> cursors(num_etypes);
  auto reset_cursors = [&] {
    for (int r = 0; r < num_etypes; ++r) {
      BlockEdges& out = block.edges[r];
      out.indptr.assign(static_cast<size_t>(num_dst[dst_type[r]]) + 1, 0);
      cursors[r] = {out.indices.data(), edge_dst[r].data(), out.eids.data(), out.indptr.data()};
    }
  };
  for (int r = 0; r < num_etypes; ++r) {
    BlockEdges& out = block.edges[r];
    out.src_type = src_type[r];
    out.dst_type = dst_type[r];
    out.indices.resize(per_relation[r]);
    out.eids.resize(per_relation[r]);
  }
  reset_cursors();
  const SortedSeeds sorted{sorted_seeds, seed_bits, seed_type, seed_index};
  EdgeFault fault = FillRelations<false>(seeds, dst, eids, src_index, runs, edge_index, sorted,
                                         dst_type, num_nodes, cursors);
  const bool in_order =
      std::all_of(cursors.begin(), cursors.end(), [](const EdgeCursor& c) { return c.in_order; });
  if (fault.kind == EdgeFault::kNone && !in_order) {
    for (int r = 0; r < num_etypes; ++r) edge_dst[r].resize(per_relation[r]);
    reset_cursors();
    fault = FillRelations<true>(seeds, dst, eids, src_index, runs, edge_index, sorted, dst_type,
                                num_nodes, cursors);
  }
  switch (fault.kind) {
    case EdgeFault::kNone:
      break;
    case EdgeFault::kOutside:
      return node_error("the destination of edge", fault.edge, dst[fault.edge]);
    case EdgeFault::kNotASeed:
      return absl::InvalidArgumentError(
          fmt::format("to_block: edge {} ({} -> {}) does not end at a seed", fault.edge,
                      src[fault.edge], dst[fault.edge]));
    case EdgeFault::kWrongType:
      return type_error(fault.edge, fault.relation, false, fault.actual);
  }
  for (int r = 0; r < num_etypes; ++r) {
    FinishCsr(edge_dst[r], cursors[r].in_order, block.edges[r]);
  }
  return block;
}

}  // namespace tessera::sampling
