// File: src/dist_partition/chunked_graph.h
//
// DGL's chunked graph format (shared/reference/distdgl.md §5.1,
// docs/distributed-partitioning.md): a folder with metadata.json and chunk
// files, the input of distributed partitioning.
//
//   metadata.json
//     graph_name                 str
//     node_type                  [ntype, ...]                (type-id order)
//     num_nodes_per_chunk        [[n, ...] per ntype]
//     num_nodes_per_type         [N per ntype]   (undocumented in DGL, read by
//                                                 its tools; optional here, but
//                                                 must agree when present)
//     edge_type                  ["src:rel:dst", ...]        (relation-id order)
//     num_edges_per_chunk        [[m, ...] per relation]
//     num_edges_per_type         [M per relation]            (as num_nodes_per_type)
//     edges      {"src:rel:dst": {"format": {"name": "csv", "delimiter": " "}
//                                            | {"name": "numpy"},
//                                 "data": [file per chunk]}}
//     node_data  {ntype: {name: {"format": {"name": "numpy"}, "data": [files]}}}
//     edge_data  {"src:rel:dst": {name: {...}}}
//
// Edge chunks hold per-type ids: CSV lines "src<delimiter>dst", or an integer
// .npy of shape [m, 2]. Chunk c of relation r holds num_edges_per_chunk[r][c]
// edges. Array chunks are .npy files of any row counts (DGL allows a feature
// its own chunking) that add up to the type's count, with one dtype and row
// shape. Paths are relative to the metadata's folder, or absolute.
//
// Ids: as the heterogeneous readers (graph.h), homogeneous node ids group the
// types in type-id order (node i of type t is ntype_offsets[t] + i) and the
// homogeneous edge order is relation by relation, each in chunk order.
//
// ReadChunkedGraph parses and validates everything that can be checked
// without reading data: keys and their shapes, type names, counts against
// each other, that every file exists, and the header (dtype, shape) of every
// .npy file. It is cheap and every rank runs it. The readers below then read
// one range of rows, touching only the chunks that hold them; what only the
// data can tell (a CSV chunk's line count, ids out of range) is checked as it
// is read. Every error names the file (and line) or the metadata key.
#ifndef TESSERA_SRC_DIST_PARTITION_CHUNKED_GRAPH_H_
#define TESSERA_SRC_DIST_PARTITION_CHUNKED_GRAPH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/graph/array.h"
#include "tessera/graph/graph.h"

namespace tessera::dist_partition {

// One node or edge array of one type, in chunks.
struct ChunkedArray {
  std::string name;
  std::vector<std::string> files;   // Resolved paths.
  std::vector<int64_t> row_starts;  // files.size() + 1: rows before each chunk.
  DType dtype = DType::kFloat32;
  std::vector<int64_t> row_shape;  // Dimensions after the first.
  int64_t rows() const { return row_starts.back(); }
};

struct ChunkedRelation {
  EdgeType type;
  int src_type = 0, dst_type = 0;  // Node type ids.
  bool csv = true;                 // Else numpy [m, 2].
  char delimiter = ' ';
  std::vector<std::string> files;     // One per chunk.
  std::vector<int64_t> chunk_starts;  // files.size() + 1: edges before each chunk.
  int64_t count() const { return chunk_starts.back(); }
};

struct ChunkedGraph {
  std::string dir;  // Folder of metadata.json.
  std::string metadata_path;
  std::string graph_name;
  std::vector<std::string> ntypes;
  std::vector<int64_t> ntype_offsets;  // ntypes.size() + 1.
  std::vector<ChunkedRelation> relations;
  std::vector<int64_t> etype_offsets;  // relations.size() + 1.
  // Per node type / relation, sorted by name.
  std::vector<std::vector<ChunkedArray>> node_data;
  std::vector<std::vector<ChunkedArray>> edge_data;

  int64_t num_nodes() const { return ntype_offsets.back(); }
  int64_t num_edges() const { return etype_offsets.back(); }
  // Type of a homogeneous node id / edge position.
  int NodeTypeOf(int64_t id) const;
  int RelationOf(int64_t position) const;
};

// Parses and validates `dir`/metadata.json (or a path to the JSON file
// itself) and the headers of its chunk files.
StatusOr<ChunkedGraph> ReadChunkedGraph(const std::string& path);

// Edges [begin, end) of the homogeneous edge order, as homogeneous node ids.
struct EdgeSlice {
  std::vector<int64_t> src, dst;
};
StatusOr<EdgeSlice> ReadEdges(const ChunkedGraph& graph, int64_t begin, int64_t end);

// Rows [begin, end) of `array` (per-type rows), as one heap array.
StatusOr<Array> ReadRows(const ChunkedArray& array, int64_t begin, int64_t end);

// `tessera chunk`: writes `graph` (any Graph: a homogeneous one gets the
// types "_N" and "_N:_E:_N") in the chunked format under `out_dir`, every
// type and array in `num_chunks` chunks of nearly equal size (numpy's
// array_split), edges as CSV (DGL's default, delimiter " ") or numpy.
// The metadata is written last. Layout: edges/<src:rel:dst>-<c>.{txt,npy},
// node_data/<ntype>/<name>-<c>.npy, edge_data/<src:rel:dst>/<name>-<c>.npy.
struct ChunkOptions {
  int num_chunks = 4;
  bool csv_edges = true;
  std::string graph_name;  // Empty: the output folder's name.
};
Status WriteChunkedGraph(const Graph& graph, const std::string& out_dir,
                         const ChunkOptions& options);

}  // namespace tessera::dist_partition

#endif  // TESSERA_SRC_DIST_PARTITION_CHUNKED_GRAPH_H_
