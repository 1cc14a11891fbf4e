// File: src/kvstore/graph_service.h
//
// GraphService: sampling, edge endpoints and degrees over a partitioned
// graph, and the rules of a sampling request that every service and server
// applies to what peers send (src/kvstore/graph_service.cc).
// Implementations are thread-safe.
#ifndef TESSERA_SRC_KVSTORE_GRAPH_SERVICE_H_
#define TESSERA_SRC_KVSTORE_GRAPH_SERVICE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/sampling/local_graph.h"
#include "tessera/base/dtype.h"
#include "tessera/base/status.h"
#include "tessera/partition/partition_book.h"

namespace tessera::kvstore {

// A neighbour-sampling request (DistGraph::sample_neighbors, in_subgraph).
struct SampleRequest {
  int64_t fanout = -1;  // -1: every edge.
  // Non-empty: one fanout per relation of the book, in relation-id order
  // (-1: all, 0: none of that relation), instead of `fanout` (DGL's
  // sample_etype_neighbors). Checked by CheckFanouts.
  std::vector<int64_t> etype_fanouts;
  sampling::EdgeDir dir = sampling::EdgeDir::kIn;
  bool replace = false;
  // Name of the float32 edge array of weights (without "edge/"); empty:
  // uniform. On a typed book every relation has its own array
  // "<src:rel:dst>/<prob>" (DGL's per-etype prob; see WeightKey), needed
  // unless the relation's entry in etype_fanouts is 0.
  std::string prob;
  std::span<const int64_t> exclude;  // Global edge ids never to pick; sorted, distinct.
  uint64_t seed = 0;
  int num_threads = 1;  // For the part sampled in this process.
};

// Degrees of every relation (GraphService::Degrees).
inline constexpr int kAllRelations = -1;

// Graph operations over the whole graph, in global ids; each machine works
// on the nodes and edges it owns (this machine's in process).
class GraphService {
 public:
  virtual ~GraphService() = default;
  virtual const PartitionBook& book() const = 0;
  // Sampled edges of `seeds` (distinct node ids), grouped by owning
  // partition in partition order, each group in seed order.
  virtual StatusOr<sampling::SampledEdges> SampleNeighbors(std::span<const int64_t> seeds,
                                                           const SampleRequest& request) = 0;
  // Endpoints of edges, in the caller's order.
  virtual Status FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) = 0;
  // In- or out-degrees of nodes, in the caller's order, counting the edges
  // of relation `etype` (a relation id of the book) or, with
  // kAllRelations, every edge.
  virtual Status Degrees(std::span<const int64_t> nids, sampling::EdgeDir dir, int etype,
                         int64_t* out) = 0;
};

// Checks a request's fanouts against the graph: `fanout` >= -1, and
// `etype_fanouts` empty or exactly one entry per relation of `book`, each
// >= -1. InvalidArgument naming the count (and the relations) or the
// relation ("src:rel:dst") of a bad value. Reads nothing but the span, so a
// peer's list is checked before it is copied.
Status CheckFanouts(int64_t fanout, std::span<const int64_t> etype_fanouts,
                    const PartitionBook& book);

// Whether sampling reads relation r's weights: all but relations whose
// entry in `etype_fanouts` is 0.
bool SamplesRelation(std::span<const int64_t> etype_fanouts, int r);

// The key of the edge array that holds relation r's weights `prob`:
// "edge/<prob>" on a homogeneous book, "edge/<src:rel:dst>/<prob>" on a
// typed one.
std::string WeightKey(const PartitionBook& book, const std::string& prob, int r);

// NotFound: relation r of a typed book has no weights array `prob`.
Status MissingWeights(const PartitionBook& book, const std::string& prob, int r);

// Checks that an edge array can serve as sampling weights (float32, one
// value per edge).
Status CheckWeightArray(const std::string& key, DType dtype, const std::vector<int64_t>& shape);

// One part's rows of an edge array, wherever they live, and what keeps
// `data` valid.
struct EdgeRows {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;  // The part's rows.
  const void* data = nullptr;
  std::shared_ptr<const void> keepalive;
};
// The rows of the array `key` ("edge/..."); NotFound when there is none.
using EdgeRowsLookup = std::function<StatusOr<EdgeRows>(const std::string& key)>;

// The weights a part samples with, empty without `prob`: on a homogeneous
// book one float per edge it owns, in edge-id order (`weights`); on a typed
// book one entry per relation (`relations`), the rows of that relation's
// array for the part's edges of it, read in place.
struct PartWeights {
  std::span<const float> weights;
  std::vector<sampling::RelationWeights> relations;
  std::shared_ptr<const void> keepalive;  // Of every array the spans read.
};
// Partition `part`'s weights for `request`, read through `lookup`. On a
// homogeneous book, the rows of "edge/<prob>". On a typed book (whose owned
// edge ids are grouped by relation: the book's EdgeTypeRange), the rows of
// each relation's "edge/<src:rel:dst>/<prob>" with the global id of the
// part's first edge of that relation; a relation whose fanout is 0 is not
// read (and has no weights). Errors: a missing array (MissingWeights on a
// typed book), one CheckWeightArray refuses, or one whose rows are not the
// part's edges of its relation (DataLoss).
StatusOr<PartWeights> PartWeightsOf(const PartitionBook& book, int part,
                                    const SampleRequest& request, const EdgeRowsLookup& lookup);

// The kernel options of a request, with this part's weights (which must
// outlive the options).
sampling::NeighborOptions NeighborOptionsOf(const SampleRequest& request,
                                            const PartWeights& weights);
sampling::NeighborOptions NeighborOptionsOf(const SampleRequest& request,
                                            PartWeights&& weights) = delete;  // Would dangle.

}  // namespace tessera::kvstore

#endif  // TESSERA_SRC_KVSTORE_GRAPH_SERVICE_H_
