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
#include <functional>
#include <unordered_map>

#include "src/dist_partition/dist_internal.h"
#include "src/dist_partition/packing.h"
#include "tessera/base/strings.h"

namespace tessera::dist_partition::internal {
namespace {

// An edge outside the inner rows. Out-edges of a part arrive with row = the
// destination's new id and src = the source's new id, sorted by OutEdgeOrder;
// the part then turns them, in place, into HALO row entries (row and src:
// local ids). Hop edges are HALO row entries from the start.
struct HaloEdge {
  int64_t row, src, eid;
};
bool OutEdgeOrder(const HaloEdge& x, const HaloEdge& y) {
  if (x.src != y.src) return x.src < y.src;
  if (x.row != y.row) return x.row < y.row;
  return x.eid < y.eid;
}
bool RowOrder(const HaloEdge& x, const HaloEdge& y) {
  return x.row != y.row ? x.row < y.row : x.eid < y.eid;
}

struct InEdge {
  int64_t src, eid;
};

// One part's local graph while it is being built.
class PartBuilder {
 public:
  // `out_edges`: the part's out-edges (OutEdgeOrder), rewritten in place.
  PartBuilder(int64_t first, int64_t end, std::span<HaloEdge> out_edges)
      : first_(first), end_(end), out_(out_edges) {
    g_.num_inner = end - first;
    g_.nid.resize(end - first);
    for (int64_t v = first; v < end; ++v) g_.nid[v - first] = v;
    g_.indptr.reserve(end - first + 1);
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

  // Room for the inner rows' `entries` and the out-edges.
  void Reserve(int64_t entries) {
    g_.indices.reserve(entries + out_.size());
    g_.eid.reserve(entries + out_.size());
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
  void EndInnerRows() {
    g_.inner_edge.reserve(g_.indices.capacity());
    g_.inner_edge.assign(g_.indices.size(), 1);
  }

  // The out-edges become HALO row entries (destination, then source, become
  // local ids in this order), after the in-edge hops: a destination a hop
  // reached first is that hop's node (DGL's GetSubgraphWithHalo).
  void AddOutEdges() {
    for (HaloEdge& e : out_) {
      const int64_t row = Local(e.row, /*expand=*/false);
      const int64_t src = Local(e.src, /*expand=*/false);
      e = {row, src, e.eid};
    }
  }
  // Hop k > 1: an in-edge of frontier node h.
  void AddHopEdge(int64_t h, const InEdge& e) {
    if (Inner(e.src)) return;  // Stored already, as an out-edge of the part.
    const int64_t src = Local(e.src, /*expand=*/true);
    hop_edges_.push_back({halo_.at(h), src, e.eid});
  }
  std::vector<int64_t> TakeFrontier() { return std::move(frontier_); }

  // HALO rows hold their out-edges and hop edges merged by edge id.
  LocalGraph Finish() {
    std::unordered_map<int64_t, int64_t>().swap(halo_);
    std::sort(out_.begin(), out_.end(), RowOrder);
    std::sort(hop_edges_.begin(), hop_edges_.end(), RowOrder);
    const size_t total = g_.indices.size() + out_.size() + hop_edges_.size();
    g_.indices.reserve(total);
    g_.eid.reserve(total);
    g_.inner_edge.reserve(total);
    g_.indptr.reserve(g_.nid.size() + 1);
    size_t a = 0, b = 0;
    auto add = [&](const HaloEdge& e) {
      g_.indices.push_back(e.src);
      g_.eid.push_back(e.eid);
      g_.inner_edge.push_back(0);
    };
    for (int64_t row = g_.num_inner; row < static_cast<int64_t>(g_.nid.size()); ++row) {
      while (true) {
        const bool in_a = a < out_.size() && out_[a].row == row;
        const bool in_b = b < hop_edges_.size() && hop_edges_[b].row == row;
        if (!in_a && !in_b) break;
        if (in_a && (!in_b || out_[a].eid < hop_edges_[b].eid)) {
          add(out_[a++]);
        } else {
          add(hop_edges_[b++]);
        }
      }
      g_.indptr.push_back(static_cast<int64_t>(g_.indices.size()));
    }
    return std::move(g_);
  }

 private:
  int64_t first_, end_;
  std::span<HaloEdge> out_;
  LocalGraph g_;
  std::unordered_map<int64_t, int64_t> halo_;
  std::vector<int64_t> frontier_;
  std::vector<HaloEdge> hop_edges_;
};

// The out-edges that leave their part, each sent to its source's owner;
// returns the ones this rank's nodes are the source of, by OutEdgeOrder.
StatusOr<std::vector<HaloEdge>> ExchangeOutEdges(Comm& comm, const Layout& layout,
                                                 const Shuffled& s) {
  const OwnedEdges& e = s.edges;
  // The owner of the source of every entry that leaves its part, else -1
  // (not sent).
  std::vector<int32_t> dest(e.src.size(), -1);
  for (int64_t row = 0; row + 1 < static_cast<int64_t>(e.in_ptr.size()); ++row) {
    const int part = s.ids.PartOfNode(s.nodes.begin + row);
    for (int64_t k = e.in_ptr[row]; k < e.in_ptr[row + 1]; ++k) {
      const int src_part = s.ids.PartOfNode(e.src[k]);
      if (src_part != part) dest[k] = layout.RankOfPart(src_part);
    }
  }
  ASSIGN_OR_RETURN(
      std::vector<HaloEdge> got, ExchangeInRounds<HaloEdge>(comm, dest, [&](int64_t k) {
        const int64_t row =
            std::upper_bound(e.in_ptr.begin(), e.in_ptr.end(), k) - e.in_ptr.begin() - 1;
        return HaloEdge{s.nodes.begin + row, e.src[k], e.eid[k]};
      }));
  Free(dest);
  std::sort(got.begin(), got.end(), OutEdgeOrder);
  return got;
}

// One hop beyond the first: the part's frontier nodes are asked of their
// owners, who answer with the nodes' in-edges; the part then adds them.
// Every rank expands one of its parts at a time.
Status ExpandHop(Comm& comm, const Layout& layout, const Shuffled& s, PartBuilder& part) {
  std::vector<int64_t> frontier = part.TakeFrontier();
  std::vector<int32_t> dest(frontier.size());
  for (size_t i = 0; i < frontier.size(); ++i) {
    dest[i] = layout.RankOfPart(s.ids.PartOfNode(frontier[i]));
  }
  Packing packing = PackBy(dest, layout.num_ranks);
  Free(dest);
  std::vector<int64_t> packed = Pack<int64_t>(packing, [&](int64_t i) { return frontier[i]; });
  ASSIGN_OR_RETURN(Received<int64_t> questions, Exchange<int64_t>(comm, packed, packing.counts));
  Free(packed);
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
  Free(degrees);
  ASSIGN_OR_RETURN(Received<InEdge> got_edges, Exchange<InEdge>(comm, in_edges, edges_to));
  Free(in_edges);
  // Answer k belongs to asked item packing.order[k].
  std::vector<int64_t> first(frontier.size()), count(frontier.size());
  int64_t offset = 0;
  for (size_t k = 0; k < packing.order.size(); ++k) {
    first[packing.order[k]] = offset;
    count[packing.order[k]] = got_degrees.data[k];
    offset += got_degrees.data[k];
  }
  for (size_t i = 0; i < frontier.size(); ++i) {
    for (int64_t k = 0; k < count[i]; ++k) {
      part.AddHopEdge(frontier[i], got_edges.data[first[i] + k]);
    }
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::vector<PartStats>> BuildLocalGraphs(
    Comm& comm, const Layout& layout, const Shuffled& s, int num_hops,
    const std::function<Status(int part, const LocalGraph& graph)>& consume) {
  std::vector<HaloEdge> out_edges;
  if (num_hops >= 1) {
    ASSIGN_OR_RETURN(out_edges, ExchangeOutEdges(comm, layout, s));
  }
  std::vector<PartStats> stats;
  const OwnedEdges& e = s.edges;
  // Each part's out-edges (sorted by source), found before any part's are
  // rewritten in place to local ids.
  std::vector<std::pair<size_t, size_t>> part_edges;
  for (int p = layout.first_part(); p < layout.end_part(); ++p) {
    const int64_t a = s.ids.node_offsets[p], b = s.ids.node_offsets[p + 1];
    auto lo = std::partition_point(out_edges.begin(), out_edges.end(),
                                   [&](const HaloEdge& x) { return x.src < a; });
    auto hi =
        std::partition_point(lo, out_edges.end(), [&](const HaloEdge& x) { return x.src < b; });
    part_edges.emplace_back(lo - out_edges.begin(), hi - out_edges.begin());
  }
  // The i-th part of every rank at once (every rank has as many).
  for (int p = layout.first_part(); p < layout.end_part(); ++p) {
    const int64_t a = s.ids.node_offsets[p], b = s.ids.node_offsets[p + 1];
    const auto [lo, hi] = part_edges[p - layout.first_part()];
    LocalGraph graph;
    {
      PartBuilder part(a, b, std::span<HaloEdge>(out_edges.data() + lo, hi - lo));
      part.Reserve(e.in_ptr[b - s.nodes.begin] - e.in_ptr[a - s.nodes.begin]);
      for (int64_t v = a; v < b; ++v) {
        const int64_t row = v - s.nodes.begin;
        const int64_t k0 = e.in_ptr[row], k1 = e.in_ptr[row + 1];
        part.AddInnerRow(std::span<const int64_t>(e.src).subspan(k0, k1 - k0),
                         std::span<const int64_t>(e.eid).subspan(k0, k1 - k0), num_hops);
      }
      part.EndInnerRows();
      for (int hop = 2; hop <= num_hops; ++hop) RETURN_IF_ERROR(ExpandHop(comm, layout, s, part));
      if (num_hops >= 1) part.AddOutEdges();  // After the in-edge hops, as DGL's.
      graph = part.Finish();
    }
    const int64_t inner_edges = s.ids.edge_offsets[p + 1] - s.ids.edge_offsets[p];
    stats.push_back({graph.num_inner, static_cast<int64_t>(graph.nid.size()) - graph.num_inner,
                     inner_edges, static_cast<int64_t>(graph.indices.size()), graph.cut_edges});
    RETURN_IF_ERROR(Agree(comm, consume(p, graph)));
  }
  return stats;
}

}  // namespace tessera::dist_partition::internal
