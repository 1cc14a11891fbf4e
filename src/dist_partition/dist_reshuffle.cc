// Step 3 of DistPartitionGraph: the reshuffle of node and edge ids
// (dist_internal.h).
#include <algorithm>
#include <numeric>

#include "src/dist_partition/dist_internal.h"
#include "src/dist_partition/packing.h"
#include "tessera/base/strings.h"

namespace tessera::dist_partition::internal {

std::vector<int64_t> EvenBounds(int64_t total, int n) {
  __extension__ using Int128 = __int128;
  std::vector<int64_t> bounds(n + 1);
  for (int i = 0; i <= n; ++i) bounds[i] = static_cast<int64_t>(Int128{total} * i / n);
  return bounds;
}

namespace {

struct IdPair {
  int64_t new_id, orig;
};

struct EdgeRecord {
  int64_t src, dst, orig;  // New source and destination ids, original position.
};

}  // namespace

StatusOr<Shuffled> Reshuffle(Comm& comm, const ChunkedGraph& graph, const Layout& layout,
                             std::vector<int32_t> home_part, EdgeSlice edges) {
  const int num_parts = layout.num_parts;
  const int num_ntypes = static_cast<int>(graph.ntypes.size());
  const int num_etypes = static_cast<int>(graph.relations.size());
  const int64_t home_begin = layout.home_begin();
  const int64_t num_home = layout.home_end() - home_begin;
  Shuffled s;
  IdLayout& ids = s.ids;
  ids.num_ntypes = num_ntypes;
  ids.num_etypes = num_etypes;

  // New node ids: by part, then original id. Rank r's home nodes of part p
  // follow those of the ranks before it.
  std::vector<int64_t> counts(num_parts, 0);
  ids.node_counts.assign(static_cast<size_t>(num_parts) * num_ntypes, 0);
  for (int64_t i = 0; i < num_home; ++i) {
    ++counts[home_part[i]];
    ++ids.node_counts[home_part[i] * num_ntypes + graph.NodeTypeOf(home_begin + i)];
  }
  std::vector<int64_t> all(static_cast<size_t>(layout.num_ranks) * num_parts);
  RETURN_IF_ERROR(comm.AllGather(counts.data(), num_parts * sizeof(int64_t), all.data()));
  RETURN_IF_ERROR(AllSum(comm, std::span<int64_t>(ids.node_counts)));
  ids.node_offsets.assign(num_parts + 1, 0);
  std::vector<int64_t> next(num_parts, 0);
  for (int p = 0; p < num_parts; ++p) {
    int64_t total = 0;
    for (int r = 0; r < layout.num_ranks; ++r) {
      if (r == layout.rank) next[p] = total;
      total += all[static_cast<size_t>(r) * num_parts + p];
    }
    ids.node_offsets[p + 1] = ids.node_offsets[p] + total;
  }
  for (int p = 0; p < num_parts; ++p) next[p] += ids.node_offsets[p];
  std::vector<int64_t> new_of_home(num_home);
  for (int64_t i = 0; i < num_home; ++i) new_of_home[i] = next[home_part[i]]++;

  // Owners learn the original id of each of their new ids.
  {
    std::vector<int32_t> dest(num_home);
    for (int64_t i = 0; i < num_home; ++i) dest[i] = layout.RankOfPart(home_part[i]);
    ASSIGN_OR_RETURN(std::vector<IdPair> got, ExchangeInRounds<IdPair>(comm, dest, [&](int64_t i) {
                       return IdPair{new_of_home[i], home_begin + i};
                     }));
    s.nodes.begin = ids.node_offsets[layout.first_part()];
    s.nodes.end = ids.node_offsets[layout.end_part()];
    s.nodes.orig.assign(s.nodes.end - s.nodes.begin, -1);
    if (static_cast<int64_t>(got.size()) != s.nodes.end - s.nodes.begin) {
      return absl::InternalError("owned node count disagrees with the node map");
    }
    for (const IdPair& pair : got) s.nodes.orig[pair.new_id - s.nodes.begin] = pair.orig;
  }

  // The new ids of the read edges' endpoints, then each edge to the owner of
  // its destination.
  const int64_t num_read = static_cast<int64_t>(edges.src.size());
  ASSIGN_OR_RETURN(std::vector<int64_t> new_src,
                   LookUp<int64_t>(comm, layout, edges.src, new_of_home));
  Free(edges.src);
  ASSIGN_OR_RETURN(std::vector<int64_t> new_dst,
                   LookUp<int64_t>(comm, layout, edges.dst, new_of_home));
  Free(edges.dst);
  Free(new_of_home);
  s.edge_dest.resize(num_read);
  for (int64_t i = 0; i < num_read; ++i) {
    s.edge_dest[i] = layout.RankOfPart(ids.PartOfNode(new_dst[i]));
  }
  const int64_t first_read = layout.reads[layout.rank];
  ASSIGN_OR_RETURN(std::vector<EdgeRecord> owned,
                   ExchangeInRounds<EdgeRecord>(comm, s.edge_dest, [&](int64_t i) {
                     return EdgeRecord{new_src[i], new_dst[i], first_read + i};
                   }));
  Free(new_src);
  Free(new_dst);

  // New edge ids: by part, relation, new destination, original id. This
  // rank's parts are consecutive ranges of destinations, so the part follows
  // the destination; with one relation the order is (destination, original).
  ids.edge_counts.assign(static_cast<size_t>(num_parts) * num_etypes, 0);
  for (const EdgeRecord& e : owned) {
    if (e.dst < s.nodes.begin || e.dst >= s.nodes.end) {
      return absl::InternalError("an edge reached a rank that does not own its destination");
    }
    ++ids.edge_counts[ids.PartOfNode(e.dst) * num_etypes + graph.RelationOf(e.orig)];
  }
  if (num_etypes == 1) {
    std::sort(owned.begin(), owned.end(), [](const EdgeRecord& x, const EdgeRecord& y) {
      return x.dst != y.dst ? x.dst < y.dst : x.orig < y.orig;
    });
  } else {
    std::sort(owned.begin(), owned.end(), [&](const EdgeRecord& x, const EdgeRecord& y) {
      const int px = ids.PartOfNode(x.dst), py = ids.PartOfNode(y.dst);
      if (px != py) return px < py;
      const int rx = graph.RelationOf(x.orig), ry = graph.RelationOf(y.orig);
      if (rx != ry) return rx < ry;
      return x.dst != y.dst ? x.dst < y.dst : x.orig < y.orig;
    });
  }
  RETURN_IF_ERROR(AllSum(comm, std::span<int64_t>(ids.edge_counts)));
  ids.edge_offsets.assign(num_parts + 1, 0);
  for (int p = 0; p < num_parts; ++p) {
    int64_t total = 0;
    for (int t = 0; t < num_etypes; ++t) total += ids.edge_counts[p * num_etypes + t];
    ids.edge_offsets[p + 1] = ids.edge_offsets[p] + total;
  }
  OwnedEdges& out = s.edges;
  out.begin = ids.edge_offsets[layout.first_part()];
  out.end = ids.edge_offsets[layout.end_part()];
  if (out.end - out.begin != static_cast<int64_t>(owned.size())) {
    return absl::InternalError("owned edge count disagrees with the edge map");
  }
  // The sorted order is the new-id order: the (part, relation) blocks of
  // this rank's parts, back to back.
  const int64_t num_nodes = s.nodes.end - s.nodes.begin;
  out.in_ptr.assign(num_nodes + 1, 0);
  out.orig.resize(owned.size());
  for (size_t k = 0; k < owned.size(); ++k) {
    ++out.in_ptr[owned[k].dst - s.nodes.begin + 1];
    out.orig[k] = owned[k].orig;
  }
  std::partial_sum(out.in_ptr.begin(), out.in_ptr.end(), out.in_ptr.begin());
  out.src.resize(owned.size());
  out.eid.resize(owned.size());
  std::vector<int64_t> cursor(out.in_ptr.begin(), out.in_ptr.end() - 1);
  for (size_t k = 0; k < owned.size(); ++k) {
    const int64_t at = cursor[owned[k].dst - s.nodes.begin]++;
    out.src[at] = owned[k].src;
    out.eid[at] = out.begin + static_cast<int64_t>(k);
  }
  s.home_part = std::move(home_part);
  return s;
}

}  // namespace tessera::dist_partition::internal
