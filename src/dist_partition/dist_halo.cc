// Step 4 of DistPartitionGraph: HALO and the local graphs of a rank's parts
// (dist_internal.h), built exactly as PartitionGraph builds them
// (docs/partition-format.md "The local graph of a part"):
//  * inner rows: the in-edges of each inner node, in edge-id order; their
//    non-inner sources become HALO nodes (hop 1) in discovery order;
//  * hop 1 also adds the out-edges of inner nodes that leave the part, in
//    (source, destination, edge id) order; their destinations become HALO
//    nodes that are not expanded;
//  * hop k > 1 adds the in-edges, from non-inner sources, of the HALO nodes
//    found through in-edges at hop k - 1, fetched from their owners;
//  * HALO rows hold their edges by edge id.
#include <algorithm>
#include <unordered_map>

#include "src/base/strings.h"
#include "src/dist_partition/dist_internal.h"
#include "src/dist_partition/packing.h"

namespace tessera::dpart::internal {
namespace {

struct OutEdge {
  int64_t src, dst, eid;
  bool operator<(const OutEdge& o) const {
    if (src != o.src) return src < o.src;
    if (dst != o.dst) return dst < o.dst;
    return eid < o.eid;
  }
};

struct InEdge {
  int64_t src, eid;
};

struct HaloEdge {
  int64_t row, src, eid;
};

// One part's local graph while it is being built.
class PartBuilder {
 public:
  PartBuilder(int64_t first, int64_t end) : first_(first), end_(end) {
    g_.num_inner = end - first;
    g_.nid.resize(end - first);
    for (int64_t v = first; v < end; ++v) g_.nid[v - first] = v;
    g_.indptr.push_back(0);
  }

  bool Inner(int64_t v) const { return v >= first_ && v < end_; }
  // The local id of new id v, added as a HALO node (and to the next hop's
  // frontier when `expand`) if new.
  int64_t Local(int64_t v, bool expand) {
    if (Inner(v)) return v - first_;
    auto [it, added] = halo_.emplace(v, static_cast<int64_t>(g_.nid.size()));
    if (added) {
      g_.nid.push_back(v);
      if (expand) frontier_.push_back(v);
    }
    return it->second;
  }

  // Inner row of node v: its in-edges (source, edge id), in edge-id order.
  void AddInnerRow(std::span<const int64_t> src, std::span<const int64_t> eid, int num_hops) {
    for (size_t k = 0; k < src.size(); ++k) {
      if (!Inner(src[k])) {
        ++g_.cut_edges;
        if (num_hops == 0) continue;
      }
      g_.indices.push_back(Local(src[k], /*expand=*/true));
      g_.eid.push_back(eid[k]);
    }
    g_.indptr.push_back(static_cast<int64_t>(g_.indices.size()));
  }
  void EndInnerRows() { g_.inner_edge.assign(g_.indices.size(), 1); }

  void AddOutEdge(const OutEdge& e) {
    halo_edges_.push_back({Local(e.dst, /*expand=*/false), Local(e.src, false), e.eid});
  }
  // Hop k > 1: an in-edge of frontier node h.
  void AddHopEdge(int64_t h, const InEdge& e) {
    if (Inner(e.src)) return;  // Stored already, as an out-edge of the part.
    const int64_t src = Local(e.src, /*expand=*/true);
    halo_edges_.push_back({halo_.at(h), src, e.eid});
  }
  std::vector<int64_t> TakeFrontier() { return std::move(frontier_); }

  LocalGraph Finish() {
    std::sort(halo_edges_.begin(), halo_edges_.end(), [](const HaloEdge& x, const HaloEdge& y) {
      return x.row != y.row ? x.row < y.row : x.eid < y.eid;
    });
    size_t next = 0;
    for (int64_t row = g_.num_inner; row < static_cast<int64_t>(g_.nid.size()); ++row) {
      for (; next < halo_edges_.size() && halo_edges_[next].row == row; ++next) {
        g_.indices.push_back(halo_edges_[next].src);
        g_.eid.push_back(halo_edges_[next].eid);
        g_.inner_edge.push_back(0);
      }
      g_.indptr.push_back(static_cast<int64_t>(g_.indices.size()));
    }
    return std::move(g_);
  }

 private:
  int64_t first_, end_;
  LocalGraph g_;
  std::unordered_map<int64_t, int64_t> halo_;
  std::vector<int64_t> frontier_;
  std::vector<HaloEdge> halo_edges_;
};

// The out-edges that leave their part, each sent to its source's owner;
// returns the ones this rank's nodes are the source of, sorted.
StatusOr<std::vector<OutEdge>> ExchangeOutEdges(Comm& comm, const Layout& layout,
                                                const Shuffled& s) {
  const OwnedEdges& e = s.edges;
  std::vector<OutEdge> leaving;
  std::vector<int32_t> dest;
  for (int64_t row = 0; row + 1 < static_cast<int64_t>(e.in_ptr.size()); ++row) {
    const int64_t v = s.nodes.begin + row;
    const int part = s.ids.PartOfNode(v);
    for (int64_t k = e.in_ptr[row]; k < e.in_ptr[row + 1]; ++k) {
      const int src_part = s.ids.PartOfNode(e.src[k]);
      if (src_part == part) continue;
      leaving.push_back({e.src[k], v, e.eid[k]});
      dest.push_back(layout.RankOfPart(src_part));
    }
  }
  ASSIGN_OR_RETURN(std::vector<OutEdge> got,
                   ExchangeInRounds<OutEdge>(comm, dest, [&](int64_t i) { return leaving[i]; }));
  Free(leaving);
  std::sort(got.begin(), got.end());
  return got;
}

// One hop beyond the first: every part's frontier nodes are asked of their
// owners, who answer with the nodes' in-edges; each part then adds them.
Status ExpandHop(Comm& comm, const Layout& layout, const Shuffled& s,
                 std::vector<PartBuilder>& parts) {
  std::vector<std::vector<int64_t>> frontiers;
  std::vector<int64_t> asked;
  std::vector<int32_t> dest;
  for (PartBuilder& part : parts) {
    frontiers.push_back(part.TakeFrontier());
    for (int64_t h : frontiers.back()) {
      asked.push_back(h);
      dest.push_back(layout.RankOfPart(s.ids.PartOfNode(h)));
    }
  }
  Packing packing = PackBy(dest, layout.num_ranks);
  std::vector<int64_t> packed = Pack<int64_t>(packing, [&](int64_t i) { return asked[i]; });
  ASSIGN_OR_RETURN(Received<int64_t> questions, Exchange<int64_t>(comm, packed, packing.counts));
  // Answers: the degree of every asked node, then their in-edges, by source.
  std::vector<int64_t> degrees;
  std::vector<InEdge> in_edges;
  std::vector<int64_t> edges_to(layout.num_ranks, 0);
  size_t at = 0;
  for (int r = 0; r < layout.num_ranks; ++r) {
    for (int64_t i = 0; i < questions.counts[r]; ++i, ++at) {
      const int64_t row = questions.data[at] - s.nodes.begin;
      if (row < 0 || row >= s.nodes.end - s.nodes.begin) {
        return absl::InternalError(StrCat("node ", questions.data[at], " asked of a non-owner"));
      }
      const int64_t b = s.edges.in_ptr[row], e = s.edges.in_ptr[row + 1];
      degrees.push_back(e - b);
      for (int64_t k = b; k < e; ++k) in_edges.push_back({s.edges.src[k], s.edges.eid[k]});
      edges_to[r] += e - b;
    }
  }
  ASSIGN_OR_RETURN(Received<int64_t> got_degrees,
                   Exchange<int64_t>(comm, degrees, questions.counts));
  ASSIGN_OR_RETURN(Received<InEdge> got_edges, Exchange<InEdge>(comm, in_edges, edges_to));
  // Answer k belongs to asked item packing.order[k].
  std::vector<int64_t> first(asked.size()), count(asked.size());
  int64_t offset = 0;
  for (size_t k = 0; k < packing.order.size(); ++k) {
    first[packing.order[k]] = offset;
    count[packing.order[k]] = got_degrees.data[k];
    offset += got_degrees.data[k];
  }
  size_t item = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    for (int64_t h : frontiers[p]) {
      for (int64_t k = 0; k < count[item]; ++k)
        parts[p].AddHopEdge(h, got_edges.data[first[item] + k]);
      ++item;
    }
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::vector<LocalGraph>> BuildLocalGraphs(Comm& comm, const Layout& layout,
                                                   const Shuffled& s, int num_hops) {
  std::vector<OutEdge> out_edges;
  if (num_hops >= 1) {
    ASSIGN_OR_RETURN(out_edges, ExchangeOutEdges(comm, layout, s));
  }
  std::vector<PartBuilder> parts;
  const OwnedEdges& e = s.edges;
  for (int p = layout.first_part(); p < layout.end_part(); ++p) {
    const int64_t a = s.ids.node_offsets[p], b = s.ids.node_offsets[p + 1];
    PartBuilder& part = parts.emplace_back(a, b);
    for (int64_t v = a; v < b; ++v) {
      const int64_t row = v - s.nodes.begin;
      const int64_t k0 = e.in_ptr[row], k1 = e.in_ptr[row + 1];
      part.AddInnerRow(std::span<const int64_t>(e.src).subspan(k0, k1 - k0),
                       std::span<const int64_t>(e.eid).subspan(k0, k1 - k0), num_hops);
    }
    part.EndInnerRows();
    if (num_hops == 0) continue;
    auto lo = std::lower_bound(out_edges.begin(), out_edges.end(), OutEdge{a, -1, -1});
    auto hi = std::lower_bound(out_edges.begin(), out_edges.end(), OutEdge{b, -1, -1});
    for (auto it = lo; it != hi; ++it) part.AddOutEdge(*it);
  }
  Free(out_edges);
  for (int hop = 2; hop <= num_hops; ++hop) RETURN_IF_ERROR(ExpandHop(comm, layout, s, parts));
  std::vector<LocalGraph> graphs;
  for (PartBuilder& part : parts) graphs.push_back(part.Finish());
  return graphs;
}

}  // namespace tessera::dpart::internal
