// File: src/sampling/hetero_block.cc
//
// Like ToBlock, without hash maps: seeds and sources are sorted as packed
// (id, index) keys with the radix sort and merged. Types and per-type ids
// come from a flat index of the book's (part, type) blocks that tries the
// block of the previous lookup first: sampled edges arrive in runs of one
// relation, and sorted sources in runs of one node type, so nearly every
// lookup is two comparisons.
#include "src/sampling/hetero_block.h"

#include <algorithm>

#include "fmt/format.h"
#include "src/sampling/radix_sort.h"

namespace tessera::sampling {
namespace {

using internal::BitsFor;
using internal::RadixSort;

// Homogeneous id -> (type, per-type id) over the non-empty blocks of one type
// inside one part, which tile [0, total) in id order (partition-major, then
// type; PartitionBook checks that).
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
    return index;
  }

  // Precondition: 0 <= id < the book's total.
  [[gnu::always_inline]] const Range& Find(int64_t id) {
    const Range& last = ranges_[last_];
    if (id >= last.start && id < last.end) return last;
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), id,
                               [](int64_t v, const Range& r) { return v < r.start; });
    last_ = static_cast<size_t>(it - ranges_.begin()) - 1;
    return ranges_[last_];
  }

 private:
  TypeIndex() = default;
  void Add(int64_t start, int64_t end, int64_t base, int type) {
    if (start < end) ranges_.push_back({start, end, base, type});
  }

  std::vector<Range> ranges_;
  size_t last_ = 0;
};

}  // namespace

int64_t HeteroBlock::num_edges() const {
  int64_t total = 0;
  for (const HeteroBlockEdges& e : edges) total += e.size();
  return total;
}

std::vector<int64_t> HeteroBlock::NextSeeds() const {
  std::vector<int64_t> seeds;
  size_t total = 0;
  for (const auto& nodes : homo_src_nodes) total += nodes.size();
  seeds.reserve(total);
  for (const auto& nodes : homo_src_nodes) seeds.insert(seeds.end(), nodes.begin(), nodes.end());
  return seeds;
}

StatusOr<HeteroBlock> ToHeteroBlock(const PartitionBook& book, std::span<const int64_t> seeds,
                                    std::span<const int64_t> src, std::span<const int64_t> dst,
                                    std::span<const int64_t> eids) {
  if (src.size() != dst.size() || src.size() != eids.size()) {
    return absl::InvalidArgumentError(
        fmt::format("to_block: src, dst and eids differ in length ({}, {}, {})", src.size(),
                    dst.size(), eids.size()));
  }
  const int num_ntypes = book.num_ntypes(), num_etypes = book.num_etypes();
  const int64_t num_nodes = book.num_nodes(), num_edges = book.num_edges();
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
  const int id_bits = std::max(1, BitsFor(static_cast<uint64_t>(num_nodes)));
  const int seed_bits = BitsFor(n_dst), edge_bits = BitsFor(n_edges);
  if (id_bits + std::max(seed_bits, edge_bits) > 64) {
    return absl::InvalidArgumentError(
        fmt::format("to_block: {} edges over {} nodes exceed its 64-bit keys", n_edges, num_nodes));
  }
  TypeIndex node_index = TypeIndex::Nodes(book), edge_index = TypeIndex::Edges(book);
  // Checked edges: the count of each relation, and the sources as packed
  // (id, edge index) keys to sort.
  UninitVector<uint64_t> sorted_src(n_edges);
  std::vector<int64_t> per_relation(num_etypes, 0);
  // The run of edges in one (part, relation) range so far: [run_from, e).
  // Bounds are held in locals (stores through int64_t pointers would force
  // reloads through a Range pointer); the empty first range makes the first
  // edge look its range up.
  int64_t run_start = 0, run_end = 0;
  int run_type = 0;
  size_t run_from = 0;
  const auto nodes_u = static_cast<uint64_t>(num_nodes);
  const auto edges_u = static_cast<uint64_t>(num_edges);
  for (size_t e = 0; e < n_edges; ++e) {
    const int64_t s = src[e], id = eids[e];
    if (static_cast<uint64_t>(s) >= nodes_u) return node_error("the source of edge", e, s);
    // (Destinations are checked where they are matched to seeds.) An id in
    // the previous edge's range is in range.
    if (id < run_start || id >= run_end) {
      if (static_cast<uint64_t>(id) >= edges_u) {
        return absl::InvalidArgumentError(fmt::format(
            "to_block: edge {} has id {}, outside the graph's {} edges", e, id, num_edges));
      }
      per_relation[run_type] += static_cast<int64_t>(e - run_from);
      const TypeIndex::Range& range = edge_index.Find(id);
      run_start = range.start;
      run_end = range.end;
      run_type = range.type;
      run_from = e;
    }
    sorted_src[e] = (static_cast<uint64_t>(s) << edge_bits) | e;
  }
  if (n_edges > 0) per_relation[run_type] += static_cast<int64_t>(n_edges - run_from);
  HeteroBlock block;
  block.dst_nodes.resize(num_ntypes);
  block.src_nodes.resize(num_ntypes);
  block.homo_src_nodes.resize(num_ntypes);
  block.edges.resize(num_etypes);
  // Destination nodes, per type in seed order; each seed's type and index.
  std::vector<int> seed_type(n_dst);
  std::vector<int64_t> seed_index(n_dst);
  UninitVector<uint64_t> sorted_seeds(n_dst), tmp;
  for (size_t i = 0; i < n_dst; ++i) {
    const TypeIndex::Range& range = node_index.Find(seeds[i]);
    seed_type[i] = range.type;
    seed_index[i] = static_cast<int64_t>(block.dst_nodes[range.type].size());
    block.dst_nodes[range.type].push_back(seeds[i] - range.start + range.base);
    sorted_seeds[i] = (static_cast<uint64_t>(seeds[i]) << seed_bits) | i;
  }
  for (int t = 0; t < num_ntypes; ++t) block.src_nodes[t] = block.dst_nodes[t];
  for (size_t i = 0; i < n_dst; ++i) block.homo_src_nodes[seed_type[i]].push_back(seeds[i]);
  RadixSort(sorted_seeds, seed_bits, seed_bits + id_bits, tmp);
  const uint64_t position_mask = (uint64_t{1} << seed_bits) - 1;
  auto seed_id = [&](size_t k) { return static_cast<int64_t>(sorted_seeds[k] >> seed_bits); };
  for (size_t k = 1; k < n_dst; ++k) {
    if (seed_id(k) == seed_id(k - 1)) {
      return absl::InvalidArgumentError(fmt::format("to_block: seed {} appears twice", seed_id(k)));
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
  // Sources sorted by id (packed with the edge index), merged with the
  // sorted seeds: a seed keeps its destination index, every other node is
  // appended to its type's sources, so in increasing id order (as ToBlock).
  // Each edge's source index carries the source's type in its top bits.
  RadixSort(sorted_src, edge_bits, edge_bits + id_bits, tmp);
  const uint64_t edge_mask = (uint64_t{1} << edge_bits) - 1;
  // Type ids are below 2^15 (PartitionBook) and indices below 2^48 (edges).
  constexpr int kTypeShift = 48;
  constexpr int64_t kIndexMask = (int64_t{1} << kTypeShift) - 1;
  if (n_edges > static_cast<size_t>(kIndexMask)) {
    return absl::InvalidArgumentError(fmt::format("to_block: {} edges are too many", n_edges));
  }
  UninitVector<int64_t> src_index(n_edges);
  // The sources of each type so far (its seeds first): the arrays are
  // sized for the edges whose relation starts at that type, grown if a
  // wrongly typed source (which the scatter below reports) exceeds that,
  // and cut at the end. The current type's are written through locals.
  std::vector<int64_t> num_src(num_ntypes);
  {
    std::vector<int64_t> room(num_ntypes, 0);
    for (int r = 0; r < num_etypes; ++r) room[src_type[r]] += per_relation[r];
    for (int t = 0; t < num_ntypes; ++t) {
      num_src[t] = static_cast<int64_t>(block.src_nodes[t].size());
      block.src_nodes[t].resize(num_src[t] + room[t]);
      block.homo_src_nodes[t].resize(num_src[t] + room[t]);
    }
  }
  int out_type = -1;
  int64_t *out_src = nullptr, *out_homo = nullptr, out_size = 0, out_room = 0;
  auto write_to = [&](int t) {
    if (out_type >= 0) num_src[out_type] = out_size;
    out_type = t;
    out_size = num_src[t];
    out_room = static_cast<int64_t>(block.src_nodes[t].size());
    out_src = block.src_nodes[t].data();
    out_homo = block.homo_src_nodes[t].data();
  };
  // The next seed at or after the current source, and the node range of
  // the last source that is not a seed, in locals (see the check pass).
  size_t k = 0;  // Into sorted_seeds.
  auto next_seed = [&] { return k < n_dst ? seed_id(k) : INT64_MAX; };
  int64_t seed_at = next_seed();
  int64_t current = -1, packed_index = 0;
  int64_t node_start = 0, node_end = 0, node_offset = 0;
  int node_type = 0;
  for (uint64_t packed : sorted_src) {
    const int64_t id = static_cast<int64_t>(packed >> edge_bits);
    if (id != current) {
      current = id;
      while (seed_at < id) {
        ++k;
        seed_at = next_seed();
      }
      if (seed_at == id) {
        const size_t i = sorted_seeds[k] & position_mask;
        packed_index = seed_index[i] | (static_cast<int64_t>(seed_type[i]) << kTypeShift);
      } else {
        if (id < node_start || id >= node_end) {
          const TypeIndex::Range& range = node_index.Find(id);
          node_start = range.start;
          node_end = range.end;
          node_offset = range.base - range.start;
          node_type = range.type;
        }
        if (node_type != out_type) write_to(node_type);
        if (out_size == out_room) {
          const size_t grown = 2 * static_cast<size_t>(out_room) + 16;
          block.src_nodes[out_type].resize(grown);
          block.homo_src_nodes[out_type].resize(grown);
          write_to(out_type);
        }
        out_src[out_size] = id + node_offset;
        out_homo[out_size] = id;
        packed_index = out_size++ | (static_cast<int64_t>(node_type) << kTypeShift);
      }
    }
    src_index[packed & edge_mask] = packed_index;
  }
  if (out_type >= 0) num_src[out_type] = out_size;
  for (int t = 0; t < num_ntypes; ++t) {
    block.src_nodes[t].resize(num_src[t]);
    block.homo_src_nodes[t].resize(num_src[t]);
  }
  // Each edge into its relation, with its destination's index (edges come
  // grouped by destination, mostly in seed order: the next seed is tried
  // first, then a binary search).
  // The write positions of each relation; those of the current relation
  // are held in `at` (edges come in runs of one relation).
  struct Cursor {
    int64_t *src, *dst, *eid;
  };
  std::vector<Cursor> cursors(num_etypes);
  for (int r = 0; r < num_etypes; ++r) {
    HeteroBlockEdges& out = block.edges[r];
    for (auto* v : {&out.src, &out.dst, &out.eids}) v->resize(per_relation[r]);
    cursors[r] = {out.src.data(), out.dst.data(), out.eids.data()};
  }
  // The current destination and relation are held in locals (see above).
  int64_t last_dst = 0, last_seed = -1, dst_at = 0;
  int seed_t = -1;
  int r = -1, want_dst_type = -1;
  int64_t want_src_type = -1, r_start = 0, r_end = 0, r_offset = 0;
  Cursor at{};
  for (size_t e = 0; e < n_edges; ++e) {
    const int64_t d = dst[e];
    if (e == 0 || d != last_dst) {  // (Any id may come first, -1 too.)
      if (last_seed + 1 < static_cast<int64_t>(n_dst) && seeds[last_seed + 1] == d) {
        ++last_seed;
      } else {
        if (static_cast<uint64_t>(d) >= nodes_u) return node_error("the destination of edge", e, d);
        uint64_t probe = static_cast<uint64_t>(d) << seed_bits;
        auto it = std::lower_bound(sorted_seeds.begin(), sorted_seeds.end(), probe);
        if (it == sorted_seeds.end() || static_cast<int64_t>(*it >> seed_bits) != d) {
          return absl::InvalidArgumentError(fmt::format(
              "to_block: edge {} ({} -> {}) does not end at a seed", e, src[e], d));
        }
        last_seed = static_cast<int64_t>(*it & position_mask);
      }
      last_dst = d;
      seed_t = seed_type[last_seed];
      dst_at = seed_index[last_seed];
    }
    const int64_t id = eids[e];  // (In the graph: checked above.)
    if (id < r_start || id >= r_end) {
      const TypeIndex::Range& range = edge_index.Find(id);
      r_start = range.start;
      r_end = range.end;
      r_offset = range.base - range.start;
      if (range.type != r) {
        if (r >= 0) cursors[r] = at;
        r = range.type;
        at = cursors[r];
        want_dst_type = dst_type[r];
        want_src_type = src_type[r];
      }
    }
    if (seed_t != want_dst_type) return type_error(e, r, false, seed_t);
    const int64_t source = src_index[e];
    if ((source >> kTypeShift) != want_src_type) {
      return type_error(e, r, true, static_cast<int>(source >> kTypeShift));
    }
    *at.src++ = source & kIndexMask;
    *at.dst++ = dst_at;
    *at.eid++ = id + r_offset;
  }
  return block;
}

}  // namespace tessera::sampling
