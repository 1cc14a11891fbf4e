// File: src/partition/part_writer.h
//
// The second half of PartitionGraph (partition.h states the semantics): given
// every node's part, reshuffles node and edge ids and builds and writes the
// local graph and arrays of each part, one part at a time, then the id
// mappings (docs/partition-format.md).
//
// Memory: what is kept for the whole run is the new id of every node and of
// every edge and a few arrays per node, in 32-bit ids when the graph's node
// and edge counts fit (64-bit otherwise). A part's local graph is built from
// sweeps over the input edge list (a sweep drops the list's mapped pages
// behind it), written and freed before the next part starts, so beyond that
// state the peak is one part's edges and HALO. Arrays are written straight
// from the input, a chunk of rows at a time. Not thread-safe for the same
// output folder.
#ifndef TESSERA_SRC_PARTITION_PART_WRITER_H_
#define TESSERA_SRC_PARTITION_PART_WRITER_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/partition/partition.h"
#include "tessera/base/status.h"
#include "tessera/graph/graph.h"

namespace tessera {

struct WritePartsOptions {
  int num_parts = 1;
  int num_hops = 1;
  bool return_mapping = false;  // Also write orig_nids.npy and orig_eids.npy.
  // The assignment into num_parts * T trainers (node array trainer_id), or
  // empty when T == 1.
  std::span<const int32_t> trainer;
  // 32-bit ids where the graph's counts allow (false: 64-bit always, the
  // same output; tests compare the two).
  bool narrow_ids = true;
  std::string skip_node_array;  // A node array not written (it only balanced).
};

// The global layout the partition config records, and what was written.
struct WrittenParts {
  std::vector<int64_t> node_offsets, edge_offsets;  // num_parts + 1 each.
  std::vector<int64_t> node_counts, edge_counts;    // num_parts x types / relations.
  std::vector<PartStats> parts;
  int64_t edge_cut = 0;
  double reshuffle_seconds = 0;
  double write_seconds = 0;
};

// Writes <out_path>/part<i>/... for every part and, when asked, the mappings.
// Preconditions: `graph` is valid (Graph::Validate); part[v] in
// [0, num_parts) for every node and every part has a node; the trainer
// assignment, when given, has one entry per node. On error, returns it and
// leaves whatever it wrote for the caller to remove.
StatusOr<WrittenParts> WriteParts(const Graph& graph, std::span<const int32_t> part,
                                  const std::string& out_path, const WritePartsOptions& options);

// "part<p>": part p's folder under the output folder.
std::string PartName(int p);

// More than one node type or relation: type arrays in the local graph and
// array names "<type>/<name>" (docs/partition-format.md).
bool TypedLayout(const Graph& graph);

// The arrays of node type t (relation t when !node), named as the partition
// names them, but for one named `skip`.
std::vector<std::pair<std::string, const Array*>> TypeArrays(const Graph& graph, bool node, int t,
                                                             std::string_view skip = {});

}  // namespace tessera

#endif  // TESSERA_SRC_PARTITION_PART_WRITER_H_
