// File: src/partition/partition_util.h
//
// Pieces that PartitionGraph (partition.h) and the distributed partitioner
// (src/dist_partition) share, so that both write the same output and guard
// the output folder the same way.
#ifndef TESSERA_SRC_PARTITION_PARTITION_UTIL_H_
#define TESSERA_SRC_PARTITION_PARTITION_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/partition/partition_config.h"
#include "tessera/partition/partition_graph.h"

namespace tessera {

// Whether `name` (a graph or array name) is safe as a file name: non-empty,
// not "." or "..", only letters, digits, '_', '-' and '.'.
bool SafeName(const std::string& name);

// An exclusive lock (flock) on an output folder, held while a run writes
// there: a second run into the same folder is refused at once, instead of
// mixing its files with the first's. Released when destroyed.
class OutputLock {
 public:
  OutputLock() = default;
  OutputLock(OutputLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  OutputLock& operator=(OutputLock&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~OutputLock();

 private:
  friend StatusOr<OutputLock> LockOutputFolder(const std::string& out_path);
  int fd_ = -1;
};
StatusOr<OutputLock> LockOutputFolder(const std::string& out_path);

// Prepares `out_path` for the partition whose config is `config_path` and
// whose parts are part0 ... part<num_parts - 1>: creates and locks the folder
// (FailedPrecondition if another run holds it); refuses (FailedPrecondition)
// if another partition config there names part folders this run would
// overwrite (they would then describe the wrong data); removes an earlier
// config at `config_path` (it reappears only once every part is complete);
// checks that the folder is writable. Keep the lock until the run ends.
StatusOr<OutputLock> PrepareOutputFolder(const std::string& out_path,
                                         const std::string& config_path, int num_parts);

// The checks both partitioners make of their arguments: a safe graph name,
// a graph with nodes and edges (`input` names it in the message, if given),
// 1 <= num_parts <= nodes, num_parts * trainers per machine <= nodes (and
// < 2^31), hops, coarsening and coarsen_min_arcs in range.
Status CheckPartitionArguments(const std::string& graph_name, int64_t num_nodes, int64_t num_edges,
                               int num_parts, const PartitionOptions& o,
                               const std::string& input = "");

// The config fields both partitioners fill the same way: name, counts,
// method, part folders and the options. The caller adds ids, types and
// array names.
PartitionConfig BaseConfig(const std::string& graph_name, int64_t num_nodes, int64_t num_edges,
                           int num_parts, const PartitionOptions& o);

// A config's files of parts 0 .. num_parts - 1: part<p>/graph, node_feat,
// edge_feat (relative to the config).
std::vector<PartitionConfig::PartFiles> PartFolders(int num_parts);

// The random method's part of nodes [begin, end): one Below(num_parts) per
// node from one stream seeded by `seed`, in node order, entered at `begin`,
// so that ranges of nodes assigned apart (by different processes) get the
// parts a single pass gives. All zeros, without draws, for one part.
std::vector<int32_t> RandomParts(uint64_t seed, int64_t begin, int64_t end, int num_parts);

// The index i with bounds[i] <= x < bounds[i + 1] (bounds ascending, at
// least two; x below bounds[1] gives 0, x at or past the last bound the last
// index).
inline int Bucket(std::span<const int64_t> bounds, int64_t x) {
  return static_cast<int>(std::upper_bound(bounds.begin() + 1, bounds.end() - 1, x) -
                          bounds.begin()) -
         1;
}

// Ids after the reshuffle, by part and within a part by type: part p holds
// [offsets[p], offsets[p + 1]), type 0's block first, and counts (K x T)
// holds each block's size. The first id of type t's block in part p.
inline int64_t TypeBlockStart(std::span<const int64_t> offsets, std::span<const int64_t> counts,
                              int num_types, int p, int t) {
  int64_t start = offsets[p];
  for (int u = 0; u < t; ++u) start += counts[p * num_types + u];
  return start;
}
// The type of `id` (below offsets.back()): which block of its part holds it.
inline int BlockTypeOf(std::span<const int64_t> offsets, std::span<const int64_t> counts,
                       int num_types, int64_t id) {
  if (num_types == 1) return 0;
  const int p = Bucket(offsets, id);
  int64_t at = offsets[p];
  int t = 0;
  while (t + 1 < num_types && id >= at + counts[p * num_types + t]) {
    at += counts[p * num_types + t++];
  }
  return t;
}

}  // namespace tessera

#endif  // TESSERA_SRC_PARTITION_PARTITION_UTIL_H_
