// File: include/tessera/graph/graph.h
//
// Graph: the in-memory homogeneous graph every reader returns and the
// partitioner consumes. Edges are a COO list of int64 node ids (edge i goes
// src[i] -> dst[i]); node and edge arrays are named Arrays whose first
// dimension is num_nodes or num_edges. Graphs are move-only values; not
// thread-safe for mutation.
#ifndef TESSERA_INCLUDE_TESSERA_GRAPH_GRAPH_H_
#define TESSERA_INCLUDE_TESSERA_GRAPH_GRAPH_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/graph/array.h"

namespace tessera {

// A relation of a heterogeneous graph: DGL's canonical edge type
// (src_type, relation, dst_type), written "src:rel:dst".
struct EdgeType {
  std::string src_type;
  std::string relation;
  std::string dst_type;
  std::string Canonical() const { return src_type + ":" + relation + ":" + dst_type; }
  bool operator==(const EdgeType&) const = default;
};

// Parses "src:rel:dst"; InvalidArgument naming `text` otherwise.
StatusOr<EdgeType> ParseEdgeType(const std::string& text);

// Checks a node or edge type name: non-empty, printable, no '/', ':' or NUL
// (type names become file names and "src:rel:dst" keys). `what` names it.
Status CheckTypeName(const std::string& name, const std::string& what);

// Looks a type up by name: a node type by its name; a relation by its
// canonical "src:rel:dst" or by its relation name when that is unambiguous.
// NotFound naming the choices, or InvalidArgument naming the candidates of an
// ambiguous relation name.
StatusOr<int> FindNodeType(const std::vector<std::string>& ntypes, const std::string& ntype);
StatusOr<int> FindEdgeType(const std::vector<EdgeType>& etypes, const std::string& etype);

struct Graph {
  int64_t num_nodes = 0;
  Array src = Array::Empty(DType::kInt64, {0});  // int64 [num_edges]
  Array dst = Array::Empty(DType::kInt64, {0});  // int64 [num_edges]
  std::map<std::string, Array> node_data;        // first dim num_nodes
  std::map<std::string, Array> edge_data;        // first dim num_edges

  // Types (DGL's to_homogeneous form). Empty for a homogeneous graph, which
  // has one node type "_N" and one relation "_N:_E:_N" and keeps its arrays
  // in node_data / edge_data. A heterogeneous graph (any number of types,
  // one included) groups its ids by type: node type t holds the ids
  // [ntype_offsets[t], ntype_offsets[t+1]), relation r the edge positions
  // [etype_offsets[r], etype_offsets[r+1]); per-type id = id - offset. Its
  // arrays are per type, in ntype_data[t] / etype_data[r] (first dimension
  // the type's count); node_data / edge_data stay empty.
  std::vector<std::string> ntypes;
  std::vector<EdgeType> etypes;
  std::vector<int64_t> ntype_offsets;  // ntypes.size() + 1 entries.
  std::vector<int64_t> etype_offsets;  // etypes.size() + 1 entries.
  std::vector<std::map<std::string, Array>> ntype_data;
  std::vector<std::map<std::string, Array>> etype_data;

  bool is_hetero() const { return !ntypes.empty(); }
  int num_ntypes() const { return is_hetero() ? static_cast<int>(ntypes.size()) : 1; }
  int num_etypes() const { return is_hetero() ? static_cast<int>(etypes.size()) : 1; }
  // Index of a node type / relation (a relation by name when unambiguous, or
  // "src:rel:dst"); NotFound / InvalidArgument naming it and the choices.
  StatusOr<int> NodeTypeId(const std::string& ntype) const;
  StatusOr<int> EdgeTypeId(const std::string& etype) const;

  int64_t num_edges() const { return src.rows(); }
  std::span<const int64_t> src_ids() const { return src.span<int64_t>(); }
  std::span<const int64_t> dst_ids() const { return dst.span<int64_t>(); }

  // Checks the invariants: src/dst are 1-D int64 of equal length, ids lie in
  // [0, num_nodes), array first dimensions match; for a heterograph also the
  // type tables (names, offsets covering every id, each relation's endpoints
  // of its declared types). `source` names the input in error messages.
  // Reads every id once; a mapped edge list's pages are dropped behind the
  // check (the data stays readable).
  Status Validate(const std::string& source) const;
};

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

#endif  // TESSERA_INCLUDE_TESSERA_GRAPH_GRAPH_H_
