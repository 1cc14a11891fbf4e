// File: include/tessera/core/graph.h
//
// Graph: the in-memory homogeneous graph every reader returns and the
// partitioner consumes. Edges are a COO list of int64 node ids (edge i goes
// src[i] -> dst[i]); node and edge arrays are named Arrays whose first
// dimension is num_nodes or num_edges. CompressedGraph is the CSR/CSC form
// built from it. Graphs are move-only values; not thread-safe for mutation.
#ifndef TESSERA_INCLUDE_TESSERA_CORE_GRAPH_H_
#define TESSERA_INCLUDE_TESSERA_CORE_GRAPH_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tessera/core/array.h"
#include "tessera/core/status.h"

namespace tessera {

struct Graph {
  int64_t num_nodes = 0;
  Array src = Array::Empty(DType::kInt64, {0});  // int64 [num_edges]
  Array dst = Array::Empty(DType::kInt64, {0});  // int64 [num_edges]
  std::map<std::string, Array> node_data;        // first dim num_nodes
  std::map<std::string, Array> edge_data;        // first dim num_edges

  int64_t num_edges() const { return src.rows(); }
  std::span<const int64_t> src_ids() const { return src.span<int64_t>(); }
  std::span<const int64_t> dst_ids() const { return dst.span<int64_t>(); }

  // Checks the invariants: src/dst are 1-D int64 of equal length, ids lie in
  // [0, num_nodes), array first dimensions match. `source` names the input in
  // error messages.
  Status Validate(const std::string& source) const;
};

// CSR (rows = sources, indices = destinations) or CSC (rows = destinations,
// indices = sources) adjacency. eid[k] is the COO position of entry k. Within
// a row, entries are in increasing eid order.
struct CompressedGraph {
  int64_t num_rows = 0;
  std::vector<int64_t> indptr;   // num_rows + 1
  std::vector<int64_t> indices;  // num_edges
  std::vector<int64_t> eid;      // num_edges

  int64_t degree(int64_t row) const { return indptr[row + 1] - indptr[row]; }
};

// Counting-sort construction, O(num_nodes + num_edges).
CompressedGraph BuildCsc(const Graph& graph);
CompressedGraph BuildCsr(const Graph& graph);
// Same for an arbitrary COO list: rows[i] -> cols[i].
CompressedGraph BuildCompressed(int64_t num_rows, std::span<const int64_t> rows,
                                std::span<const int64_t> cols);

// Keeps only the edges with keep[i] != 0 (COO order preserved); edge arrays
// follow.
void KeepEdges(Graph* graph, std::span<const uint8_t> keep);
// Removes every edge i -> i.
int64_t RemoveSelfLoops(Graph* graph);
// Appends the reverse of every edge (edge arrays are copied to the reverse).
void AddReverseEdges(Graph* graph);
// Removes repeated (src, dst) pairs, keeping the first occurrence.
int64_t RemoveDuplicateEdges(Graph* graph);

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_CORE_GRAPH_H_
