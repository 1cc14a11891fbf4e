// File: src/graph/reader_util.h
//
// Pieces the graph readers share (readers.cc for the homogeneous layouts,
// typed_readers.cc and ogb_typed_reader.cc for the heterogeneous ones):
// the checks of node counts that a file claims, the text readers of OGB's
// CSV files, folder listings and the choice of an OGB split. Internal to
// src/graph; every error names the file (and the line for text input).
#ifndef TESSERA_SRC_GRAPH_READER_UTIL_H_
#define TESSERA_SRC_GRAPH_READER_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/graph/array.h"
#include "tessera/graph/graph.h"

namespace tessera {

// OK if `count` nodes, a count that `source` claims, may be given
// `bytes_per_node` bytes each for `purpose`: at most `max_bytes` (when > 0)
// and at most the memory available now (AvailableMemoryBytes). Else
// ResourceExhausted naming `source`, the count and the bytes. Call before
// allocating anything sized by the claim.
Status CheckClaimedNodes(const std::string& source, int64_t count, int64_t bytes_per_node,
                         std::string_view purpose, int64_t max_bytes);
// CheckClaimedNodes for the 8 bytes per node of the CSR offsets that every
// consumer of a graph builds.
Status CheckGraphNodes(const std::string& source, int64_t num_nodes, int64_t max_bytes);

// Sorted names (without ".npy") of the *.npy files in `dir`; empty if `dir`
// does not exist.
std::vector<std::string> NpyNames(const std::string& dir);
// Sorted names of the sub-folders of `dir`; empty if `dir` does not exist.
std::vector<std::string> SubdirNames(const std::string& dir);

// Bounds on the ids of an edge file: ids must lie in [0, count) of the node
// type `type` (checks skipped when count < 0). `relation` names the edge type
// in errors.
struct EdgeIdBounds {
  std::string relation;
  std::string src_type, dst_type;
  int64_t src_count = -1, dst_count = -1;
};

// The columns of an edge list file (see readers.h (b)): "#" comments, one
// optional header line, 2 or 3 columns (src, dst[, weight]), non-negative
// ids. `weight` is filled only for 3 columns; `columns` is 0 for a file
// without data lines. Errors name the file and the line.
struct EdgeColumns {
  std::vector<int64_t> src, dst;
  std::vector<float> weight;
  size_t columns = 0;
};
StatusOr<EdgeColumns> ReadEdgeColumns(const std::string& path, const EdgeIdBounds& bounds = {});

// One integer per line (empty lines skipped).
StatusOr<std::vector<int64_t>> ReadIntColumn(const std::string& path);

// A dense numeric matrix of exactly `rows` lines; the width is the first
// line's field count (a width of 1 gives a 1-D array). T is float (features)
// or int64_t (labels: "nan" -> -1, integral floats like "3.0" accepted).
// Memory follows the file, not `rows`.
template <typename T>
StatusOr<Array> ReadMatrix(const std::string& path, int64_t rows);

// A bool mask of `num_nodes` entries set at the ids listed one per line in
// `path` (an OGB split file). `num_nodes` is a claim: checked first.
StatusOr<Array> ReadMask(const std::string& path, int64_t num_nodes, int64_t max_claimed_bytes);

// The OGB split of `dir` (the sub-folders of dir/split): `requested` if
// given (NotFound listing the splits otherwise), else "public" if present,
// else the only one; "" when there is no split folder; InvalidArgument when
// there are several and none is requested.
StatusOr<std::string> ChooseSplit(const std::string& dir, const std::string& requested);

// The edges of one relation of a heterogeneous input: per-type ids (1-D
// int64, already checked to lie within their node types) and edge arrays.
struct RelationEdges {
  EdgeType type;
  Array src, dst;
  std::map<std::string, Array> data;
};

// Builds a heterogeneous Graph (graph.h) from node types with their counts
// (in type-id order), their arrays, and relations (in relation-id order):
// homogeneous id = per-type id + the type's offset. Validates the result;
// errors name `source`.
StatusOr<Graph> AssembleTyped(const std::string& source, std::vector<std::string> ntypes,
                              const std::vector<int64_t>& counts,
                              std::vector<std::map<std::string, Array>> ntype_data,
                              std::vector<RelationEdges> relations);

}  // namespace tessera

#endif  // TESSERA_SRC_GRAPH_READER_UTIL_H_
