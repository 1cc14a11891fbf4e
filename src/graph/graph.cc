#include "src/graph/graph.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <tuple>

#include "src/base/strings.h"

namespace tessera {

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
  for (const auto& [name, ids] : {std::pair<const char*, const Array*>{"src", &src},
                                  std::pair<const char*, const Array*>{"dst", &dst}}) {
    auto span = ids->span<int64_t>();
    for (size_t i = 0; i < span.size(); ++i) {
      if (span[i] < 0 || span[i] >= num_nodes) {
        return absl::OutOfRangeError(StrCat(source, ": ", name, "[", i, "] = ", span[i],
                                            " is out of range [0, ", num_nodes, ")"));
      }
    }
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
  return absl::OkStatus();
}

CompressedGraph BuildCompressed(int64_t num_rows, std::span<const int64_t> rows,
                                std::span<const int64_t> cols) {
  CompressedGraph g;
  g.num_rows = num_rows;
  g.indptr.assign(static_cast<size_t>(num_rows) + 1, 0);
  for (int64_t r : rows) ++g.indptr[r + 1];
  std::partial_sum(g.indptr.begin(), g.indptr.end(), g.indptr.begin());
  g.indices.resize(rows.size());
  g.eid.resize(rows.size());
  std::vector<int64_t> cursor(g.indptr.begin(), g.indptr.end() - 1);
  for (size_t e = 0; e < rows.size(); ++e) {
    int64_t pos = cursor[rows[e]]++;
    g.indices[pos] = cols[e];
    g.eid[pos] = static_cast<int64_t>(e);
  }
  return g;
}

CompressedGraph BuildCsc(const Graph& graph) {
  return BuildCompressed(graph.num_nodes, graph.dst_ids(), graph.src_ids());
}

CompressedGraph BuildCsr(const Graph& graph) {
  return BuildCompressed(graph.num_nodes, graph.src_ids(), graph.dst_ids());
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
