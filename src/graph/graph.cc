#include "tessera/graph/graph.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "tessera/base/strings.h"

namespace tessera {

StatusOr<EdgeType> ParseEdgeType(const std::string& text) {
  size_t a = text.find(':');
  size_t b = a == std::string::npos ? a : text.find(':', a + 1);
  if (b == std::string::npos || text.find(':', b + 1) != std::string::npos) {
    return absl::InvalidArgumentError(
        StrCat("edge type '", text, "' is not a canonical type 'src:rel:dst'"));
  }
  EdgeType t{text.substr(0, a), text.substr(a + 1, b - a - 1), text.substr(b + 1)};
  RETURN_IF_ERROR(CheckTypeName(t.src_type, StrCat("source type of '", text, "'")));
  RETURN_IF_ERROR(CheckTypeName(t.relation, StrCat("relation of '", text, "'")));
  RETURN_IF_ERROR(CheckTypeName(t.dst_type, StrCat("destination type of '", text, "'")));
  return t;
}

Status CheckTypeName(const std::string& name, const std::string& what) {
  bool ok = !name.empty() && name != "." && name != "..";
  for (char ch : name) {
    ok = ok && ch != '/' && ch != ':' && static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f;
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        StrCat(what, " '", name, "' is not a valid type name (non-empty, printable, without '/' ",
               "or ':')"));
  }
  return absl::OkStatus();
}

StatusOr<int> FindNodeType(const std::vector<std::string>& ntypes, const std::string& ntype) {
  for (size_t t = 0; t < ntypes.size(); ++t) {
    if (ntypes[t] == ntype) return static_cast<int>(t);
  }
  return absl::NotFoundError(
      StrCat("no node type '", ntype, "' (the graph has: ", StrJoin(ntypes, ", "), ")"));
}

StatusOr<int> FindEdgeType(const std::vector<EdgeType>& etypes, const std::string& etype) {
  std::vector<std::string> names;
  std::vector<int> matches;
  for (size_t r = 0; r < etypes.size(); ++r) {
    names.push_back(etypes[r].Canonical());
    if (names.back() == etype) return static_cast<int>(r);
    if (etypes[r].relation == etype) matches.push_back(static_cast<int>(r));
  }
  if (matches.size() == 1) return matches[0];
  if (matches.size() > 1) {
    std::vector<std::string> which;
    for (int r : matches) which.push_back(names[r]);
    return absl::InvalidArgumentError(StrCat("edge type '", etype, "' is ambiguous: it names ",
                                             StrJoin(which, ", "),
                                             "; use the canonical 'src:rel:dst' form"));
  }
  return absl::NotFoundError(
      StrCat("no edge type '", etype, "' (the graph has: ", StrJoin(names, ", "), ")"));
}

StatusOr<int> Graph::NodeTypeId(const std::string& ntype) const {
  return is_hetero() ? FindNodeType(ntypes, ntype) : FindNodeType({"_N"}, ntype);
}

StatusOr<int> Graph::EdgeTypeId(const std::string& etype) const {
  return is_hetero() ? FindEdgeType(etypes, etype) : FindEdgeType({{"_N", "_E", "_N"}}, etype);
}

namespace {

Status ValidateTypes(const Graph& g, const std::string& source) {
  auto bad = [&](auto&&... parts) {
    return absl::InvalidArgumentError(StrCat(source, ": ", parts...));
  };
  const size_t nt = g.ntypes.size(), et = g.etypes.size();
  if (nt > 32767) return bad(nt, " node types; at most 32767 are supported");
  if (et == 0) return bad("a heterogeneous graph needs at least one relation");
  if (g.ntype_offsets.size() != nt + 1 || g.etype_offsets.size() != et + 1 ||
      g.ntype_data.size() != nt || g.etype_data.size() != et) {
    return bad("type tables do not match the ", nt, " node types and ", et, " relations");
  }
  for (size_t t = 0; t < nt; ++t) {
    RETURN_IF_ERROR(CheckTypeName(g.ntypes[t], StrCat(source, ": node type")));
    for (size_t u = 0; u < t; ++u) {
      if (g.ntypes[u] == g.ntypes[t]) return bad("node type '", g.ntypes[t], "' appears twice");
    }
  }
  auto check_offsets = [&](const std::vector<int64_t>& off, int64_t total, const char* what) {
    if (off.front() != 0 || off.back() != total) {
      return bad(what, " offsets must run from 0 to ", total);
    }
    for (size_t i = 0; i + 1 < off.size(); ++i) {
      if (off[i + 1] < off[i]) return bad(what, " offsets must not decrease");
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(check_offsets(g.ntype_offsets, g.num_nodes, "node type"));
  RETURN_IF_ERROR(check_offsets(g.etype_offsets, g.num_edges(), "relation"));
  auto src = g.src_ids();
  auto dst = g.dst_ids();
  for (size_t r = 0; r < et; ++r) {
    const EdgeType& e = g.etypes[r];
    const std::string name = e.Canonical();
    for (size_t u = 0; u < r; ++u) {
      if (g.etypes[u] == e) return bad("relation '", name, "' appears twice");
    }
    RETURN_IF_ERROR(CheckTypeName(e.relation, StrCat(source, ": relation")));
    auto s = g.NodeTypeId(e.src_type);
    auto d = g.NodeTypeId(e.dst_type);
    if (!s.ok() || !d.ok()) {
      return bad("relation '", name, "' connects node type '", s.ok() ? e.dst_type : e.src_type,
                 "', which the graph does not have (node types: ", StrJoin(g.ntypes, ", "), ")");
    }
    const int64_t s0 = g.ntype_offsets[*s], s1 = g.ntype_offsets[*s + 1];
    const int64_t d0 = g.ntype_offsets[*d], d1 = g.ntype_offsets[*d + 1];
    for (int64_t k = g.etype_offsets[r]; k < g.etype_offsets[r + 1]; ++k) {
      if (src[k] < s0 || src[k] >= s1 || dst[k] < d0 || dst[k] >= d1) {
        return bad("edge ", k - g.etype_offsets[r], " of relation '", name,
                   "' does not go from a node of type '", e.src_type, "' to one of type '",
                   e.dst_type, "'");
      }
    }
  }
  for (size_t t = 0; t < nt + et; ++t) {
    const bool node = t < nt;
    const size_t i = node ? t : t - nt;
    const auto& arrays = node ? g.ntype_data[i] : g.etype_data[i];
    const auto& off = node ? g.ntype_offsets : g.etype_offsets;
    const int64_t rows = off[i + 1] - off[i];
    const std::string type = node ? g.ntypes[i] : g.etypes[i].Canonical();
    for (const auto& [name, array] : arrays) {
      if (array.ndim() < 1 || array.rows() != rows) {
        return bad(node ? "node" : "edge", " array '", type, "/", name, "' is ", array.Describe(),
                   " but the graph has ", rows, " ",
                   node ? "'" + type + "' nodes" : "'" + type + "' edges");
      }
    }
  }
  if (!g.node_data.empty() || !g.edge_data.empty()) {
    return bad("a heterogeneous graph keeps its arrays per type (ntype_data / etype_data)");
  }
  return absl::OkStatus();
}

}  // namespace

Status Graph::Validate(const std::string& source) const {
  if (src.dtype() != DType::kInt64 || dst.dtype() != DType::kInt64 || src.ndim() != 1 ||
      dst.ndim() != 1) {
    return absl::InvalidArgumentError(StrCat(source, ": src and dst must be 1-D int64"));
  }
  if (src.rows() != dst.rows()) {
    return absl::InvalidArgumentError(
        StrCat(source, ": src has ", src.rows(), " edges but dst has ", dst.rows()));
  }
  if (num_nodes <= 0) {
    return absl::InvalidArgumentError(StrCat(source, ": the graph has no nodes"));
  }
  // A chunk at a time, dropping a mapped list's pages behind the check, so
  // that checking a large mapped edge list does not leave it resident.
  constexpr size_t kChunk = 1 << 20;
  for (const auto& [name, ids] : {std::pair<const char*, const Array*>{"src", &src},
                                  std::pair<const char*, const Array*>{"dst", &dst}}) {
    auto span = ids->span<int64_t>();
    for (size_t begin = 0; begin < span.size(); begin += kChunk) {
      const size_t end = std::min(span.size(), begin + kChunk);
      for (size_t i = begin; i < end; ++i) {
        if (span[i] < 0 || span[i] >= num_nodes) {
          return absl::OutOfRangeError(StrCat(source, ": ", name, "[", i, "] = ", span[i],
                                              " is out of range [0, ", num_nodes, ")"));
        }
      }
      ids->ReleasePages(static_cast<int64_t>(begin), static_cast<int64_t>(end));
    }
    ids->ReleasePages();  // The pages that chunk boundaries split.
  }
  for (const auto& [name, array] : node_data) {
    if (array.ndim() < 1 || array.rows() != num_nodes) {
      return absl::InvalidArgumentError(StrCat(source, ": node array '", name, "' is ",
                                               array.Describe(), " but the graph has ", num_nodes,
                                               " nodes"));
    }
  }
  for (const auto& [name, array] : edge_data) {
    if (array.ndim() < 1 || array.rows() != num_edges()) {
      return absl::InvalidArgumentError(StrCat(source, ": edge array '", name, "' is ",
                                               array.Describe(), " but the graph has ", num_edges(),
                                               " edges"));
    }
  }
  if (is_hetero()) return ValidateTypes(*this, source);
  if (!etypes.empty() || !ntype_offsets.empty() || !etype_offsets.empty() || !ntype_data.empty() ||
      !etype_data.empty()) {
    return absl::InvalidArgumentError(
        StrCat(source, ": relations or type tables without node types"));
  }
  return absl::OkStatus();
}

namespace {

// Returns the rows of `array` at the positions where keep != 0.
Array FilterRows(const Array& array, std::span<const uint8_t> keep, int64_t kept) {
  std::vector<int64_t> shape = array.shape();
  shape[0] = kept;
  Array out = Array::Empty(array.dtype(), std::move(shape));
  const size_t rb = array.row_bytes();
  auto* dst = static_cast<uint8_t*>(out.mutable_data());
  const auto* src = static_cast<const uint8_t*>(array.data());
  for (size_t i = 0, j = 0; i < keep.size(); ++i) {
    if (keep[i]) std::memcpy(dst + (j++) * rb, src + i * rb, rb);
  }
  return out;
}

// Returns `array` stacked on top of itself (rows [0, n) then [0, n) again).
Array Doubled(const Array& array) {
  std::vector<int64_t> shape = array.shape();
  shape[0] *= 2;
  Array out = Array::Empty(array.dtype(), std::move(shape));
  auto* dst = static_cast<uint8_t*>(out.mutable_data());
  if (array.nbytes() > 0) {
    std::memcpy(dst, array.data(), array.nbytes());
    std::memcpy(dst + array.nbytes(), array.data(), array.nbytes());
  }
  return out;
}

}  // namespace

void KeepEdges(Graph* graph, std::span<const uint8_t> keep) {
  int64_t kept = std::count_if(keep.begin(), keep.end(), [](uint8_t k) { return k != 0; });
  if (kept == graph->num_edges()) return;
  graph->src = FilterRows(graph->src, keep, kept);
  graph->dst = FilterRows(graph->dst, keep, kept);
  for (auto& [name, array] : graph->edge_data) array = FilterRows(array, keep, kept);
}

int64_t RemoveSelfLoops(Graph* graph) {
  auto src = graph->src_ids();
  auto dst = graph->dst_ids();
  std::vector<uint8_t> keep(src.size());
  int64_t removed = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    keep[i] = src[i] != dst[i];
    removed += !keep[i];
  }
  if (removed > 0) KeepEdges(graph, keep);
  return removed;
}

void AddReverseEdges(Graph* graph) {
  const int64_t m = graph->num_edges();
  Array src = Array::Empty(DType::kInt64, {2 * m});
  Array dst = Array::Empty(DType::kInt64, {2 * m});
  auto s = src.mutable_span<int64_t>();
  auto d = dst.mutable_span<int64_t>();
  auto old_src = graph->src_ids();
  auto old_dst = graph->dst_ids();
  for (int64_t i = 0; i < m; ++i) {
    s[i] = old_src[i];
    d[i] = old_dst[i];
    s[m + i] = old_dst[i];
    d[m + i] = old_src[i];
  }
  graph->src = std::move(src);
  graph->dst = std::move(dst);
  for (auto& [name, array] : graph->edge_data) array = Doubled(array);
}

int64_t RemoveDuplicateEdges(Graph* graph) {
  // Sort the edges by (source, destination, eid) and keep the first of every
  // run. Memory is O(edges) whatever num_nodes is: ids read from a file may
  // be few but huge (a CSR needed num_nodes + 1 offsets; a 28-byte edge list
  // with the id 137333002583881 asked for a petabyte).
  struct Edge {
    int64_t src, dst, eid;
    bool operator<(const Edge& o) const {
      return std::tie(src, dst, eid) < std::tie(o.src, o.dst, o.eid);
    }
  };
  auto src = graph->src_ids();
  auto dst = graph->dst_ids();
  std::vector<Edge> edges(src.size());
  for (size_t e = 0; e < src.size(); ++e) edges[e] = {src[e], dst[e], static_cast<int64_t>(e)};
  std::sort(edges.begin(), edges.end());
  std::vector<uint8_t> keep(src.size(), 1);
  int64_t removed = 0;
  for (size_t k = 1; k < edges.size(); ++k) {
    if (edges[k].src == edges[k - 1].src && edges[k].dst == edges[k - 1].dst) {
      keep[edges[k].eid] = 0;
      ++removed;
    }
  }
  if (removed > 0) KeepEdges(graph, keep);
  return removed;
}

}  // namespace tessera
