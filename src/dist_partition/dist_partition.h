// File: src/dist_partition/dist_partition.h
//
// DistPartitionGraph: partitioning by P ranks (MPI processes under mpirun, or
// threads; see comm.h), each reading only its share of a chunked graph
// (chunked_graph.h) and holding only its share of the graph. The output is
// the format PartitionGraph writes (docs/partition-format.md), with the same
// rules for ids, HALO and arrays; docs/distributed-partitioning.md describes
// the steps.
//
//   1. read: rank r reads edges [m*r/P, m*(r+1)/P) of the homogeneous edge
//      order; node ids [n*r/P, n*(r+1)/P) are "homed" on it (their arrays are
//      read there and their part is decided there).
//   2. assign: every home node gets its part: uniformly at random -- the
//      same draws as PartitionGraph's random method, so the output equals
//      the single-process one for any P -- or (metis) by PT-Scotch's
//      distributed multilevel k-way (SCOTCH_dgraphPart) on the graph
//      contracted by label propagation, projected back with refinement,
//      then a repair of the balance of every class (dist_internal.h).
//   3. reshuffle: new node ids (by part, then original id) from per-rank
//      counts; every edge goes to the rank owning its destination's part,
//      with both endpoints' new ids looked up at their home ranks; new edge
//      ids (by part, relation, new destination, original id) from counts.
//   4. HALO: out-edges that leave a part go to the source's owner; deeper
//      hops fetch the in-edges of the previous hop's HALO nodes from their
//      owners, one exchange per hop.
//   5. write: each rank writes the parts it owns (part p is owned by rank
//      p / (K/P)); node and edge arrays travel from the ranks that read them
//      to the owners, one array at a time; rank 0 writes orig_nids.npy /
//      orig_eids.npy (rows gathered in bounded pieces) and, once every rank
//      has finished, the config.
//
// Memory: every step holds O((n + m) / P) ids per rank (plus one array's
// rows of its parts), given parts of similar sizes; exchanges move data in
// bounded pieces. Counts are 64-bit.
//
// Errors: a rank's error (bad chunk, unwritable folder) becomes, on every
// rank, the same error naming that rank (Agree); a rank that dies stops the
// run through mpirun. Either way the config is not written and the part
// folders this run wrote are removed, so nothing partial looks valid.
#ifndef TESSERA_SRC_DIST_PARTITION_DIST_PARTITION_H_
#define TESSERA_SRC_DIST_PARTITION_DIST_PARTITION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "src/dist_partition/chunked_graph.h"
#include "src/dist_partition/comm.h"
#include "src/partition/partition.h"
#include "tessera/base/status.h"

namespace tessera::dist_partition {

// PartitionOptions (include/tessera/partition/partition_graph.h), with the
// distributed partitioner's default coarsening and what only it has.
struct DistPartitionOptions : PartitionOptions {
  DistPartitionOptions() { coarsening = 8; }
  // The config's graph_name; empty: the metadata's.
  std::string graph_name;
  // Called on every rank as each step starts, with the step's name ("read",
  // "assign", "shuffle", "halo", "write"): progress reporting, and fault
  // injection in tests (an error stops the run as a failed rank does).
  std::function<Status(Comm& comm, std::string_view step)> on_step;
};

struct DistPartitionResult {
  std::string config_path;       // On rank 0.
  std::vector<PartStats> parts;  // Every part, on every rank.
  int64_t edge_cut = 0;
  // Per step, in order: name, seconds (rank 0's), peak RSS of every rank.
  struct Step {
    std::string name;
    double seconds = 0;
    std::vector<int64_t> peak_rss;
  };
  std::vector<Step> steps;
};

// Collective: every rank of `comm` calls it with the same arguments.
// `num_parts` must be a multiple of comm.size().
StatusOr<DistPartitionResult> DistPartitionGraph(Comm& comm, const std::string& input,
                                                 int num_parts, const std::string& out_path,
                                                 const DistPartitionOptions& options);

}  // namespace tessera::dist_partition

#endif  // TESSERA_SRC_DIST_PARTITION_DIST_PARTITION_H_
