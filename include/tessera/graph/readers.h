// File: include/tessera/graph/readers.h
//
// Graph input. Five layouts, one result type (Graph):
//  (a) npy directory: src.npy, dst.npy (int32/int64), node arrays <name>.npy
//      (first dimension = num_nodes), edge arrays edge_feat/<name>.npy, and an
//      optional meta.json with "num_nodes";
//  (b) an edge list file: CSV or TSV (or space separated), optionally gzip
//      compressed, "#" comment lines, an optional header line, an optional
//      third numeric column stored as edge array "weight";
//  (c) the OGB node-property-prediction layout (raw/*.csv.gz plus
//      split/<name>/{train,valid,test}.csv.gz -> train_mask, val_mask,
//      test_mask);
//  (d) heterogeneous npy folder (docs/hetero-input.md): meta.json with
//      "ntypes" (name -> count, in type-id order) and "etypes" (canonical
//      "src:rel:dst" relations, in relation-id order), node arrays
//      nodes/<ntype>/<name>.npy, and per relation
//      edges/<src>__<rel>__<dst>/{src,dst}.npy (per-type ids) plus edge arrays
//      <name>.npy in the same folder;
//  (e) the OGB heterogeneous layout (ogbn-mag): raw/num-node-dict.csv.gz,
//      raw/relations/<src>___<rel>___<dst>/edge.csv.gz,
//      raw/{node-feat,node-label,node_year}/<ntype>/*.csv.gz -> feat, label,
//      year, split/<name>/<ntype>/{train,valid,test}.csv.gz -> masks.
// (d) and (e) give a heterogeneous Graph (graph.h): node ids grouped by type
// in type-id order, edges grouped by relation, arrays per type.
// Every error names the file (and the line for text input) and the cause.
//
// Sizes a file claims rather than holds -- the node count of
// num-node-list.csv.gz or meta.json, an edge list's largest id + 1, or
// ReadOptions::num_nodes -- are checked before anything is allocated for
// them: the per-node arrays the reader builds (OGB split masks, 1 byte per
// node) and the graph's CSR offsets that every consumer builds (8 bytes per
// node) must each fit in the memory available (AvailableMemoryBytes:
// RAM, swap and the cgroup v2 limit) and in max_claimed_bytes when that is
// set. Else ResourceExhausted naming the file, the count and the bytes. The
// per-type counts of meta.json (d) and num-node-dict.csv.gz (e) are claims
// too: their sum is checked the same way.
// Arrays read from .npy files are mapped, and their shape must match the
// file's size, so they hold what they claim.
#ifndef TESSERA_INCLUDE_TESSERA_GRAPH_READERS_H_
#define TESSERA_INCLUDE_TESSERA_GRAPH_READERS_H_

#include <string>

#include "tessera/base/status.h"
#include "tessera/graph/graph.h"

namespace tessera {

// kNpy covers (a) and (d), kOgb covers (c) and (e); the folder decides.
enum class GraphFormat { kAuto, kNpy, kEdgeList, kOgb };
StatusOr<GraphFormat> ParseGraphFormat(const std::string& name);

struct ReadOptions {
  GraphFormat format = GraphFormat::kAuto;
  // OGB split name; empty = "public" if present, else the only split.
  std::string split;
  // Edge list: number of nodes; -1 = max id + 1.
  int64_t num_nodes = -1;
  // Transformations, applied in this order after reading. Homogeneous graphs
  // only: asking for any on a heterogeneous input is InvalidArgument.
  bool remove_self_loops = false;
  bool add_reverse_edges = false;  // Make the graph undirected.
  bool remove_duplicate_edges = false;
  // Bound, in bytes, on any one allocation sized by a count that a file
  // claims (see above); 0 = no bound but the memory available. For callers
  // with a memory budget of their own, such as the fuzz harness.
  int64_t max_claimed_bytes = 0;
};

// Reads any supported layout (auto-detected unless options.format says):
// raw/num-node-dict.csv.gz -> (e), raw/edge.csv.gz -> (c), a meta.json with
// an "ntypes" key -> (d), src.npy or dst.npy -> (a), a file -> (b).
StatusOr<Graph> ReadGraph(const std::string& path, const ReadOptions& options = {});

// One layout each; max_claimed_bytes as in ReadOptions.
StatusOr<Graph> ReadNpyDirectory(const std::string& dir, int64_t max_claimed_bytes = 0);
StatusOr<Graph> ReadEdgeList(const std::string& path, int64_t num_nodes = -1,
                             int64_t max_claimed_bytes = 0);
StatusOr<Graph> ReadOgb(const std::string& dir, const std::string& split = "",
                        int64_t max_claimed_bytes = 0);
StatusOr<Graph> ReadTypedNpyDirectory(const std::string& dir, int64_t max_claimed_bytes = 0);
StatusOr<Graph> ReadOgbTyped(const std::string& dir, const std::string& split = "",
                             int64_t max_claimed_bytes = 0);

// True if `dir` holds a meta.json that parses as a JSON object with an
// "ntypes" key (layout (d)).
bool IsTypedNpyDirectory(const std::string& dir);

}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_GRAPH_READERS_H_
