// File: include/tessera/dist/graph_services.h
//
// Graph queries served by the machines (dgl.distributed.graph_services):
// neighbour sampling, in-subgraphs, edge subgraphs.
#ifndef TESSERA_INCLUDE_TESSERA_DIST_GRAPH_SERVICES_H_
#define TESSERA_INCLUDE_TESSERA_DIST_GRAPH_SERVICES_H_

#include <torch/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/dist/dist_graph.h"

namespace tessera {
namespace dist {

// ------------------------------------------------------------ graph operations

// Sets the seed that sampling calls without their own seed draw from (each
// call takes the next value), like torch::manual_seed.
void manual_seed(uint64_t seed);

struct SampleOptions {
  std::string edge_dir = "in";  // "in": in-edges of the seeds; "out": out-edges.
  std::string prob;             // Name of a float32 edge tensor of weights; "": uniform.
  torch::Tensor exclude_edges;  // Edge ids never to sample (their fanout is still filled).
  bool replace = false;
  std::optional<uint64_t> seed;  // Default: the next value from manual_seed's stream.
};

// Some edges of the graph, as COO in global ids (DGL's frontier graph; the
// node set is the whole graph). Grouped by owning partition.
struct Subgraph {
  torch::Tensor src, dst, eids;  // int64 [num_edges]
  int64_t num_edges() const { return src.size(0); }
};

// Up to `fanout` (-1: all) edges of each seed (distinct node ids): every
// machine samples the seeds it owns (this machine's in process, from shared
// memory), and the results are merged. On a graph with several relations
// the fanout is per relation, as in DGL (sample_etype_neighbors): up to
// `fanout` edges of each relation.
Subgraph sample_neighbors(const DistGraph& g, const torch::Tensor& seeds, int64_t fanout,
                          const SampleOptions& options = {});

// Per-relation fanouts (DGL's dict fanout): relation name (plain when
// unambiguous, or "src:rel:dst") -> fanout (-1: all, 0: none). Every relation
// of the graph must be given.
using FanoutMap = std::map<std::string, int64_t>;
Subgraph sample_neighbors(const DistGraph& g, const torch::Tensor& seeds, const FanoutMap& fanout,
                          const SampleOptions& options = {});

// The sampled edges of a heterograph by relation, in per-type ids (DGL's
// heterograph frontier: frontier.edges(etype=...) and edges[etype].data[EID]).
struct TypedSubgraph {
  std::vector<EdgeType> canonical_etypes;
  std::vector<Subgraph> edges;  // Per relation id: src, dst and eids in per-type ids.
  // The edges of a relation (name or "src:rel:dst"; Error if unknown or ambiguous).
  const Subgraph& operator[](const std::string& etype) const;
  int64_t num_edges() const;
};
// Typed seeds: {ntype: per-type ids}. Types not given have no seeds.
TypedSubgraph sample_neighbors(const DistGraph& g,
                               const std::map<std::string, torch::Tensor>& seeds, int64_t fanout,
                               const SampleOptions& options = {});
TypedSubgraph sample_neighbors(const DistGraph& g,
                               const std::map<std::string, torch::Tensor>& seeds,
                               const FanoutMap& fanout, const SampleOptions& options = {});
// Every in-edge of the nodes.
Subgraph in_subgraph(const DistGraph& g, const torch::Tensor& nodes);

// The edges `eids` with their endpoints relabelled 0..num_nodes-1.
struct EdgeSubgraph {
  torch::Tensor src, dst;  // Relabelled endpoints of each edge.
  torch::Tensor nodes;     // Global id of each relabelled node, sorted (dgl.NID).
  torch::Tensor eids;      // Global edge ids (dgl.EID), in the given order.
};
EdgeSubgraph edge_subgraph(const DistGraph& g, const torch::Tensor& eids);

}  // namespace dist
}  // namespace tessera

#endif  // TESSERA_INCLUDE_TESSERA_DIST_GRAPH_SERVICES_H_
